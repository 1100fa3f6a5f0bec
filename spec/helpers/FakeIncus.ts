/**
 * An Incus server in memory, for specs, benches and demos: projects, networks, profiles and
 * instances that answer the reads the enricher makes, after a settable latency on a given
 * scheduler (virtual time in specs), with settable failures, and lifecycle events shaped like
 * the ones a real LXD 5.0 sends.
 */
import { Observable, SchedulerLike, asyncScheduler, defer, finalize, mergeMap, of, timer } from 'rxjs';
import {
  IncusApiError,
  IncusInstance,
  IncusInstanceState,
  IncusInterfaceState,
  IncusNetwork,
  IncusProject,
  IncusReader,
  IncusStreamItem,
} from '../../lib/incus/api';

/** One call the fake answered (or was asked to). */
export interface FakeCall {
  method: 'getInstance' | 'getInstanceState' | 'getNetwork' | 'getProject' | 'listProjectNames' | 'listNetworkNames' | 'listInstanceNames';
  project?: string;
  name?: string;
}

/** How an instance is made. */
export interface FakeInstanceSpec {
  type?: 'container' | 'virtual-machine';
  /** The managed network its `eth0` NIC sits on; omitted: no NIC. */
  network?: string;
  /** The NIC's device key, when it differs from the guest's `eth0` (profiles naming it `eth-1`). */
  nicDevice?: string;
  config?: Record<string, string>;
  profiles?: string[];
  location?: string;
}

interface FakeInstance {
  name: string;
  project: string;
  type: 'container' | 'virtual-machine';
  status: 'Running' | 'Stopped' | 'Frozen' | 'Starting';
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  profiles: string[];
  location: string;
  /** Global IPv4 while running, once leased. */
  ipv4: string | undefined;
  /** Global IPv6 while running, once configured (SLAAC or DHCPv6). */
  ipv6: string | undefined;
  hwaddr: string;
}

interface FakeProfile {
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
}

const STATUS_CODE: Record<FakeInstance['status'], number> = { Running: 103, Stopped: 102, Frozen: 110, Starting: 106 };

function notFound(what: string): IncusApiError {
  return new IncusApiError(`${what} not found`, 404);
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Options for {@link FakeIncus}. */
export interface FakeIncusOptions {
  /** Where latency is timed. Default `asyncScheduler`; specs pass a `TestScheduler`. */
  scheduler?: SchedulerLike;
  /** Ms every call takes (0 answers synchronously), or a function of the call. Default 0. */
  latency?: number | ((call: FakeCall) => number);
  /** Unmanaged host interfaces every network listing includes (as LXD's does). Default none. */
  hostNics?: string[];
  /** Keep every call in `log`. Default false (a bench makes millions). */
  record?: boolean;
  /**
   * When an answer is taken: `answer` (default) when it is sent back, after the latency; `call`
   * when the call is made, as a server that answers a listing from what it held when the
   * request arrived.
   */
  snapshotAt?: 'call' | 'answer';
}

/**
 * An in-memory Incus: both an {@link IncusReader} (promises, abortable) and an Observable reader
 * (answers in virtual time). Mutators change the world without emitting anything; `event()`
 * builds the lifecycle event a real server would send, so a spec decides what the stream says and
 * when.
 */
export class FakeIncus implements IncusReader {
  /** Ms every call takes, or a function of the call; may be changed at any time. */
  latency: number | ((call: FakeCall) => number);
  /** Return an error to fail a call with it (checked when the call answers). */
  failWhen: ((call: FakeCall) => Error | undefined) | undefined;
  /** Every call, in order, when `record` was set. */
  readonly log: FakeCall[] = [];
  /** Calls in flight now, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;

  private readonly scheduler: SchedulerLike;
  private readonly record: boolean;
  private readonly hostNics: string[];
  private readonly snapshotAt: 'call' | 'answer';
  private readonly counts = new Map<FakeCall['method'], number>();
  private readonly projects = new Map<string, Record<string, string>>([['default', {}]]);
  private readonly networks = new Map<string, Map<string, IncusNetwork>>();
  private readonly profiles = new Map<string, Map<string, FakeProfile>>();
  private readonly instances = new Map<string, Map<string, FakeInstance>>();
  private macs = 0;

  constructor(options: FakeIncusOptions = {}) {
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.latency = options.latency ?? 0;
    this.record = options.record ?? false;
    this.hostNics = options.hostNics ?? [];
    this.snapshotAt = options.snapshotAt ?? 'answer';
  }

  /** Calls made of `method` (all methods when omitted). */
  count(method?: FakeCall['method']): number {
    if (method !== undefined) return this.counts.get(method) ?? 0;
    let total = 0;
    for (const n of this.counts.values()) total += n;
    return total;
  }

  /** Forgets every count, the log and the in-flight high-water mark. */
  resetCounts(): this {
    this.counts.clear();
    this.log.length = 0;
    this.maxInFlight = this.inFlight;
    return this;
  }

  /** Names of the projects, and of each project's instances, as the world has them now. */
  world(): { projects: string[]; instances: Array<{ project: string; name: string }>; networks: Array<{ owner: string; name: string }> } {
    return {
      projects: [...this.projects.keys()],
      instances: [...this.instances.entries()].flatMap(([project, list]) => [...list.keys()].map((name) => ({ project, name }))),
      networks: [...this.networks.entries()].flatMap(([owner, list]) => [...list.keys()].map((name) => ({ owner, name }))),
    };
  }

  // ---- the world ------------------------------------------------------------------------

  /** Creates or reconfigures a project. */
  setProject(name: string, config: Record<string, string> = {}): this {
    this.projects.set(name, { ...config });
    return this;
  }

  deleteProject(name: string): this {
    this.projects.delete(name);
    this.instances.delete(name);
    return this;
  }

  /** The project owning the networks `project` sees. */
  private owner(project: string): string {
    const features = this.projects.get(project)?.['features.networks'];
    return project !== 'default' && (features === 'true' || features === '1') ? project : 'default';
  }

  /** Creates or replaces a network in `owner`. */
  setNetwork(owner: string, name: string, options: { managed?: boolean; type?: string; config?: Record<string, string> } = {}): this {
    const nets = this.networks.get(owner) ?? new Map<string, IncusNetwork>();
    this.networks.set(owner, nets);
    nets.set(name, {
      name,
      type: options.type ?? 'bridge',
      managed: options.managed ?? true,
      config: { ...(options.config ?? {}) },
      used_by: [],
    });
    return this;
  }

  deleteNetwork(owner: string, name: string): this {
    this.networks.get(owner)?.delete(name);
    return this;
  }

  renameNetwork(owner: string, from: string, to: string): this {
    const net = this.networks.get(owner)?.get(from);
    if (net === undefined) throw notFound('Network');
    this.networks.get(owner)?.delete(from);
    this.networks.get(owner)?.set(to, { ...net, name: to });
    return this;
  }

  /** Creates or replaces a profile. */
  setProfile(project: string, name: string, profile: Partial<FakeProfile> = {}): this {
    const profiles = this.profiles.get(project) ?? new Map<string, FakeProfile>();
    this.profiles.set(project, profiles);
    profiles.set(name, { config: { ...(profile.config ?? {}) }, devices: clone(profile.devices ?? {}) });
    return this;
  }

  /** Creates a stopped instance. */
  createInstance(project: string, name: string, spec: FakeInstanceSpec = {}): this {
    const list = this.instances.get(project) ?? new Map<string, FakeInstance>();
    this.instances.set(project, list);
    const mac = (++this.macs).toString(16).padStart(6, '0');
    const hwaddr = `00:16:3e:${mac.slice(0, 2)}:${mac.slice(2, 4)}:${mac.slice(4, 6)}`;
    const devices: Record<string, Record<string, string>> = { root: { type: 'disk', path: '/', pool: 'default' } };
    const config: Record<string, string> = { 'volatile.base_image': 'bbx', ...(spec.config ?? {}) };
    if (spec.network !== undefined) {
      const key = spec.nicDevice ?? 'eth0';
      devices[key] = { type: 'nic', network: spec.network, name: 'eth0' };
      config[`volatile.${key}.hwaddr`] = hwaddr;
    }
    list.set(name, {
      name,
      project,
      type: spec.type ?? 'container',
      status: 'Stopped',
      config,
      devices,
      profiles: spec.profiles ?? ['default'],
      location: spec.location ?? 'none',
      ipv4: undefined,
      ipv6: undefined,
      hwaddr,
    });
    return this;
  }

  private get(project: string, name: string): FakeInstance {
    const instance = this.instances.get(project)?.get(name);
    if (instance === undefined) throw notFound('Instance');
    return instance;
  }

  /** Starts an instance, with its IPv4 lease already landed (`ipv4`) or not yet (omitted). */
  start(project: string, name: string, ipv4?: string): this {
    const instance = this.get(project, name);
    instance.status = 'Running';
    instance.ipv4 = ipv4;
    instance.config['volatile.last_state.power'] = 'RUNNING';
    return this;
  }

  /** A lease landing (or changing): writes only volatile state, as Incus does. */
  lease(project: string, name: string, ipv4: string | undefined): this {
    const instance = this.get(project, name);
    instance.ipv4 = ipv4;
    instance.config['volatile.eth0.last_lease'] = String(this.macs++);
    return this;
  }

  /** A global IPv6 address appearing (or going): like a lease, it writes nothing an instance read reports. */
  leaseIpv6(project: string, name: string, ipv6: string | undefined): this {
    this.get(project, name).ipv6 = ipv6;
    return this;
  }

  /** Sets the status directly (e.g. `Starting`, `Frozen`). */
  setStatus(project: string, name: string, status: FakeInstance['status']): this {
    this.get(project, name).status = status;
    return this;
  }

  stop(project: string, name: string): this {
    const instance = this.get(project, name);
    instance.status = 'Stopped';
    instance.ipv4 = undefined;
    instance.ipv6 = undefined;
    instance.config['volatile.last_state.power'] = 'STOPPED';
    return this;
  }

  /** Merges `config` into the instance's own configuration (a key set to `undefined` is removed). */
  configure(project: string, name: string, config: Record<string, string | undefined>): this {
    const instance = this.get(project, name);
    for (const [key, value] of Object.entries(config)) {
      if (value === undefined) delete instance.config[key];
      else instance.config[key] = value;
    }
    return this;
  }

  /** Replaces the instance's profiles. */
  setProfiles(project: string, name: string, profiles: string[]): this {
    this.get(project, name).profiles = [...profiles];
    return this;
  }

  renameInstance(project: string, from: string, to: string): this {
    const instance = this.get(project, from);
    this.instances.get(project)?.delete(from);
    instance.name = to;
    this.instances.get(project)?.set(to, instance);
    return this;
  }

  deleteInstance(project: string, name: string): this {
    this.instances.get(project)?.delete(name);
    return this;
  }

  /** The lifecycle event a real server would send for `action` on `name` (LXD 5.0's shape, decoded). */
  event(action: string, project: string, name: string, oldName?: string): IncusStreamItem {
    const kind = action.split('-')[0];
    const collection = kind === 'instance' ? 'instances' : kind === 'network' ? 'networks' : kind === 'profile' ? 'profiles' : 'projects';
    const query = project === 'default' ? '' : `?project=${project}`;
    return {
      kind: 'event',
      event: {
        action,
        project,
        name,
        ...(oldName !== undefined ? { oldName } : {}),
        source: `/1.0/${collection}/${name}${query}`,
        timestamp: new Date(this.scheduler.now()).toISOString(),
        location: 'none',
      },
    };
  }

  // ---- answers --------------------------------------------------------------------------

  private expanded(instance: FakeInstance): { config: Record<string, string>; devices: Record<string, Record<string, string>> } {
    const profiles = this.profiles.get(
      this.projects.get(instance.project)?.['features.profiles'] === 'true' ? instance.project : 'default',
    );
    const config: Record<string, string> = {};
    const devices: Record<string, Record<string, string>> = {};
    for (const name of instance.profiles) {
      const profile = profiles?.get(name);
      if (profile === undefined) continue;
      Object.assign(config, profile.config);
      Object.assign(devices, clone(profile.devices));
    }
    Object.assign(config, instance.config);
    Object.assign(devices, clone(instance.devices));
    return { config, devices };
  }

  private instanceAnswer(project: string, name: string): IncusInstance {
    const instance = this.get(project, name);
    const expanded = this.expanded(instance);
    return {
      name: instance.name,
      project,
      type: instance.type,
      status: instance.status,
      status_code: STATUS_CODE[instance.status],
      config: { ...instance.config },
      expanded_config: expanded.config,
      devices: clone(instance.devices),
      expanded_devices: expanded.devices,
      profiles: [...instance.profiles],
      location: instance.location,
    };
  }

  private stateAnswer(project: string, name: string): IncusInstanceState {
    const instance = this.get(project, name);
    const code = STATUS_CODE[instance.status];
    if (instance.status !== 'Running') return { status: instance.status, status_code: code, network: null, processes: 0 };
    // A virtual machine reports nothing from inside until its agent runs.
    if (instance.type === 'virtual-machine' && this.expanded(instance).config['volatile.last_state.agent'] !== 'STARTED') {
      return { status: instance.status, status_code: code, network: null, processes: -1 };
    }
    const network: Record<string, IncusInterfaceState> = {
      lo: { type: 'loopback', state: 'up', addresses: [{ family: 'inet', address: '127.0.0.1', netmask: '8', scope: 'local' }] },
    };
    if (Object.values(this.expanded(instance).devices).some((d) => d.type === 'nic')) {
      const addresses = [
        { family: 'inet6', address: `fe80::216:3eff:fe${instance.hwaddr.slice(-8).replace(/:/g, '')}`, netmask: '64', scope: 'link' },
      ];
      if (instance.ipv6 !== undefined) addresses.unshift({ family: 'inet6', address: instance.ipv6, netmask: '64', scope: 'global' });
      if (instance.ipv4 !== undefined) addresses.unshift({ family: 'inet', address: instance.ipv4, netmask: '24', scope: 'global' });
      network.eth0 = {
        type: 'broadcast',
        state: 'up',
        hwaddr: instance.hwaddr,
        host_name: `veth${instance.hwaddr.slice(-5).replace(':', '')}`,
        addresses,
      };
    }
    return { status: instance.status, status_code: code, network, processes: 1, pid: 4242 };
  }

  private networkAnswer(project: string, name: string): IncusNetwork {
    const owner = this.owner(project);
    const net = this.networks.get(owner)?.get(name);
    if (net !== undefined) return clone(net);
    if (this.hostNics.includes(name)) return { name, type: 'physical', managed: false, config: {}, used_by: null };
    throw notFound('Network');
  }

  private projectAnswer(name: string): IncusProject {
    const config = this.projects.get(name);
    if (config === undefined) throw notFound('Project');
    return { name, config: { ...config } };
  }

  private answer<T>(call: FakeCall, compute: () => T): Observable<T> {
    return defer(() => {
      this.counts.set(call.method, (this.counts.get(call.method) ?? 0) + 1);
      if (this.record) this.log.push(call);
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      const taken = this.snapshotAt === 'call' ? this.attempt(compute) : undefined;
      // A call stops counting as in flight when it answers (or is abandoned), not after whoever
      // received the answer has made the next call.
      let open = true;
      const close = (): void => {
        if (!open) return;
        open = false;
        this.inFlight--;
      };
      const result$ = defer(() => {
        close();
        const failure = this.failWhen?.(call);
        if (failure !== undefined) throw failure;
        const outcome = taken ?? this.attempt(compute);
        if ('error' in outcome) throw outcome.error;
        return of(outcome.value);
      });
      const ms = typeof this.latency === 'function' ? this.latency(call) : this.latency;
      return (ms > 0 ? timer(ms, this.scheduler).pipe(mergeMap(() => result$)) : result$).pipe(finalize(close));
    });
  }

  private attempt<T>(compute: () => T): { value: T } | { error: unknown } {
    try {
      return { value: compute() };
    } catch (error) {
      return { error };
    }
  }

  instance$(project: string, name: string): Observable<IncusInstance> {
    return this.answer({ method: 'getInstance', project, name }, () => this.instanceAnswer(project, name));
  }

  instanceState$(project: string, name: string): Observable<IncusInstanceState> {
    return this.answer({ method: 'getInstanceState', project, name }, () => this.stateAnswer(project, name));
  }

  network$(project: string, name: string): Observable<IncusNetwork> {
    return this.answer({ method: 'getNetwork', project, name }, () => this.networkAnswer(project, name));
  }

  project$(name: string): Observable<IncusProject> {
    return this.answer({ method: 'getProject', name }, () => this.projectAnswer(name));
  }

  projectNames$(): Observable<string[]> {
    return this.answer({ method: 'listProjectNames' }, () => [...this.projects.keys()]);
  }

  networkNames$(project: string): Observable<string[]> {
    return this.answer({ method: 'listNetworkNames', project }, () => [
      ...(this.networks.get(this.owner(project))?.keys() ?? []),
      ...this.hostNics,
    ]);
  }

  instanceNames$(project: string): Observable<string[]> {
    // LXD answers an unknown project's listing with 200 and [] (lxd-fixture §5).
    return this.answer({ method: 'listInstanceNames', project }, () => [...(this.instances.get(project)?.keys() ?? [])]);
  }

  // ---- the promise face -----------------------------------------------------------------

  /**
   * This fake as a plain promise-based {@link IncusReader} (without the Observable face), so a
   * consumer takes the path a real REST client does: promises, `AbortSignal`, `fromAbortable`.
   */
  asPromiseReader(): IncusReader {
    return {
      getInstance: (p, n, s) => this.getInstance(p, n, s),
      getInstanceState: (p, n, s) => this.getInstanceState(p, n, s),
      getNetwork: (p, n, s) => this.getNetwork(p, n, s),
      getProject: (n, s) => this.getProject(n, s),
      listProjectNames: (s) => this.listProjectNames(s),
      listNetworkNames: (p, s) => this.listNetworkNames(p, s),
      listInstanceNames: (p, s) => this.listInstanceNames(p, s),
    };
  }

  private promise<T>(source: Observable<T>, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        subscription.unsubscribe();
        reject(signal?.reason);
      };
      const subscription = source.subscribe({
        next: (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(value);
        },
        error: (error: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      });
      if (!subscription.closed) signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  getInstance(project: string, name: string, signal?: AbortSignal): Promise<IncusInstance> {
    return this.promise(this.instance$(project, name), signal);
  }

  getInstanceState(project: string, name: string, signal?: AbortSignal): Promise<IncusInstanceState> {
    return this.promise(this.instanceState$(project, name), signal);
  }

  getNetwork(project: string, name: string, signal?: AbortSignal): Promise<IncusNetwork> {
    return this.promise(this.network$(project, name), signal);
  }

  getProject(name: string, signal?: AbortSignal): Promise<IncusProject> {
    return this.promise(this.project$(name), signal);
  }

  listProjectNames(signal?: AbortSignal): Promise<string[]> {
    return this.promise(this.projectNames$(), signal);
  }

  listNetworkNames(project: string, signal?: AbortSignal): Promise<string[]> {
    return this.promise(this.networkNames$(project), signal);
  }

  listInstanceNames(project: string, signal?: AbortSignal): Promise<string[]> {
    return this.promise(this.instanceNames$(project), signal);
  }
}
