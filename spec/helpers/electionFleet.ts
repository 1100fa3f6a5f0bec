import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm, KV } from '@nats-io/kv';
import { NatsConnection, connect } from '@nats-io/transport-node';
import { callerIdFor } from '../../lib/choria/protocol/subjects';
import type { RequestRecord } from '../../streams/simulate/simulatedFleet';
import { createElectionBucket } from '../../streams/election/electionBucket';
import { createClaimsBucket } from '../../streams/claims/claimsBucket';
import { NatsServerProcess, freePort, startNatsServer } from '../../streams/natsServerProcess';
import { NatsClusterProcess, startNatsCluster } from '../../streams/natsClusterProcess';
import { DiscardPolicy, StorageType, jetstreamManager } from '@nats-io/jetstream';
import {
  CHORIA_ADMIN,
  CLAIMS_BUCKET,
  PROVISIONER,
  PROVISIONING_SERVER,
  RECORDS_STREAM,
  RECORDS_SUBJECT,
  choriaAccountsConfig,
} from './choriaBroker';
import { MINIMAL_HELPER, sampleValue } from './provisioner';
import { RxfleetProcess, killAll, startRxfleet } from './rxfleetProcess';
import { waitFor } from './waitFor';

/**
 * Several real `rxfleet provision` processes with `leader_election: true` (or `rxfleet.mode:
 * active-active`) and a fleet from `rxfleet simulate --trace`, on a private nats-server laid out as
 * a Choria broker (the election and claims buckets in the `choria` account, provisioners and
 * servers in the restricted `provisioning` account). For the HA and active-active specs and the
 * benchmarks; no test-framework globals, so all can use it.
 */

export const ELECTION_TOKEN = 'ha-token-3141';

/** One provisioner process. */
export interface ProvisionerProcess {
  readonly name: string;
  /** Its Choria identity, the value it writes to the election key. */
  readonly identity: string;
  /** What the simulated servers see as its `callerid`. */
  readonly callerId: string;
  readonly process: RxfleetProcess;
  metrics(): Promise<string>;
  /** Whether its /ready answers 200 (false if it cannot be asked). */
  ready(): Promise<boolean>;
  /** Whether its `choria_election_leader` gauge says it leads; false if it cannot be asked. */
  leads(): Promise<boolean>;
  /** Epoch ms of its first log line with this message, once it has logged it. */
  logged(message: string): Promise<number>;
}

export interface ProvisionerSettings {
  helper?: string;
  workers?: number;
  /** How the instances share the fleet (`single`: they do not). Default `leader_election`. */
  mode?: 'leader_election' | 'active-active' | 'single';
  /** `rxfleet.helper_mode`. Default per-node. */
  helperMode?: 'per-node' | 'persistent';
  /** Arguments for node itself (`--cpu-prof`, `--heap-prof`), before the command's. */
  nodeArgs?: string[];
  /** `loglevel`. Default info. */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Run with `--debug` (the election's create and refresh steps are debug lines). */
  debug?: boolean;
  /** The brokers it is given (`plugin.choria.middleware_hosts`). Default the fleet's first server. */
  servers?: string[];
  /** `interval`, the discovery period (and twice it the stale cut-off). Default upstream's 1m. */
  interval?: string;
  /** `rxfleet.queue_capacity`, the sightings admitted and waiting for a worker. Default 50,000. */
  queueCapacity?: number;
  /** `rxfleet.records: true`, its own record every second. */
  records?: boolean;
  /** More keys of the `rxfleet:` section, as `key: value`. */
  rxfleet?: string[];
}

/** The records stream a site makes in the `choria` account (`nats stream add`), for {@link ElectionFleet.start}. */
export interface RecordsStreamSettings {
  /** Default 1. */
  replicas?: number;
  /** Records the stream takes at most; with `discard: 'new'` it then refuses writes. Default no limit. */
  maxMsgs?: number;
  /** Default `old`. */
  discard?: 'old' | 'new';
}

/** A broker, its election bucket, and the processes started on it; `stop()` ends them all. */
export class ElectionFleet {
  private readonly processes: RxfleetProcess[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), 'rxfleet-ha-'));

  private constructor(
    readonly server: NatsServerProcess,
    private readonly admin: NatsConnection,
    /** Set when the fleet runs on a three-server cluster ({@link ElectionFleet.startCluster}). */
    readonly cluster?: NatsClusterProcess,
  ) {}

  /**
   * As {@link ElectionFleet.start}, on a three-server cluster laid out as Choria's, with both
   * buckets replicated on `replicas` servers (default 3); `partitionable` lets a spec cut a server
   * off (natsPartition.ts); `binary` is the nats-server (default the one first on PATH).
   */
  static async startCluster(
    ttlMs: number,
    options: { claimsTtlMs?: number; replicas?: number; partitionable?: boolean; records?: RecordsStreamSettings; binary?: string } = {},
  ): Promise<ElectionFleet> {
    const { replicas = 3, partitionable = false, binary } = options;
    const cluster = await startNatsCluster({ config: choriaAccountsConfig, partitionable, ...(binary !== undefined ? { binary } : {}) });
    let admin: NatsConnection | undefined;
    try {
      admin = await connect({ servers: cluster.urls, user: CHORIA_ADMIN.user, pass: CHORIA_ADMIN.password, maxReconnectAttempts: -1 });
      await createElectionBucket(admin, { ttlMs, replicas });
      if (options.claimsTtlMs !== undefined) await createClaimsBucket(admin, { ttlMs: options.claimsTtlMs, replicas });
      if (options.records !== undefined) await createRecordsStream(admin, { replicas, ...options.records });
      return new ElectionFleet(cluster.servers[0], admin, cluster);
    } catch (error) {
      await admin?.close();
      await cluster.stop();
      throw error;
    }
  }

  /**
   * Starts the broker and creates the election bucket with this TTL, as a Choria broker does, and
   * with `claimsTtlMs` the claims bucket, as a site's administrator would (`nats kv add`).
   */
  static async start(ttlMs: number, options: { claimsTtlMs?: number; records?: RecordsStreamSettings } = {}): Promise<ElectionFleet> {
    const server = await startNatsServer({ config: choriaAccountsConfig });
    let admin: NatsConnection | undefined;
    try {
      admin = await connect({ servers: server.url, user: CHORIA_ADMIN.user, pass: CHORIA_ADMIN.password });
      await createElectionBucket(admin, { ttlMs });
      if (options.claimsTtlMs !== undefined) await createClaimsBucket(admin, { ttlMs: options.claimsTtlMs });
      if (options.records !== undefined) await createRecordsStream(admin, options.records);
      return new ElectionFleet(server, admin);
    } catch (error) {
      await admin?.close();
      await server.stop();
      throw error;
    }
  }

  /** The election bucket, as the broker's administrator (who may write what a Go provisioner would). */
  bucket(): Promise<KV> {
    return new Kvm(this.admin).open('CHORIA_LEADER_ELECTION');
  }

  /** The claims bucket, as the broker's administrator sees it. */
  claims(): Promise<KV> {
    return new Kvm(this.admin).open(CLAIMS_BUCKET);
  }

  /** Kills the broker at once (SIGKILL, as a crash) and starts it again on the same port and store after `downMs`. */
  async restartBroker(downMs: number): Promise<void> {
    await this.server.kill();
    await new Promise((r) => setTimeout(r, downMs));
    await this.server.restart();
  }

  /** Starts `rxfleet provision` as `<name>.example.net`, in the provisioning account. */
  async provisioner(name: string, settings: ProvisionerSettings = {}): Promise<ProvisionerProcess> {
    const identity = `${name}.example.net`;
    const monitorPort = await freePort();
    const config = this.file(
      `${name}.yaml`,
      [
        `helper: ${settings.helper ?? MINIMAL_HELPER}`,
        `token: ${ELECTION_TOKEN}`,
        'choria_insecure: true',
        `workers: ${settings.workers ?? 4}`,
        ...(settings.interval !== undefined ? [`interval: ${settings.interval}`] : []),
        `monitor_port: ${monitorPort}`,
        `site: ${name}`,
        ...(settings.logLevel !== undefined ? [`loglevel: ${settings.logLevel}`] : []),
        settings.mode === undefined || settings.mode === 'leader_election' ? 'leader_election: true' : 'leader_election: false',
        `rxfleet: {nats_user: ${PROVISIONER.user}, nats_password: ${PROVISIONER.password}, shutdown_grace: 2s${settings.mode === 'active-active' ? ', mode: active-active' : ''}${settings.helperMode !== undefined ? `, helper_mode: ${settings.helperMode}` : ''}${settings.queueCapacity !== undefined ? `, queue_capacity: ${settings.queueCapacity}` : ''}${settings.records === true ? ', records: true, records_every: 1s' : ''}${(settings.rxfleet ?? []).map((kv) => `, ${kv}`).join('')}}`,
      ].join('\n'),
    );
    const hosts = (settings.servers ?? [this.server.url]).join(',');
    const choria = this.file(`${name}.cfg`, `identity = ${identity}\nplugin.choria.middleware_hosts = ${hosts}\n`);
    const process = this.track(
      startRxfleet(['provision', '--config', config, '--choria-config', choria, ...(settings.debug === true ? ['--debug'] : [])], {
        nodeArgs: settings.nodeArgs ?? [],
      }),
    );
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${monitorPort}/metrics`)).text();
    return {
      name,
      identity,
      callerId: callerIdFor(identity),
      process,
      metrics,
      ready: async () =>
        (await fetch(`http://127.0.0.1:${monitorPort}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      leads: async () => {
        if (!process.running()) return false;
        const text = await metrics().catch(() => '');
        return sampleValue(text, 'choria_election_leader', { identity }) === 1;
      },
      logged: async (message) => Number((await process.next((l) => l.msg === message)).time),
    };
  }

  /** Starts `rxfleet simulate --json --trace` with these extra arguments, in the provisioning account, on `url` (default the first server). */
  simulate(args: string[], url = this.server.url): RxfleetProcess {
    return this.track(
      startRxfleet([
        'simulate',
        '--nats',
        url,
        '--nats-user',
        PROVISIONING_SERVER.user,
        '--nats-password',
        PROVISIONING_SERVER.password,
        '--token',
        ELECTION_TOKEN,
        '--json',
        '--trace',
        '--report-every',
        '0',
        ...args,
      ]),
    );
  }

  /**
   * Runs `rxfleet ...args` (status, history) as the broker's administrator, who may read the
   * records stream and the buckets (the provisioning account may not), on `url` (default the
   * first server).
   */
  asAdministrator(args: string[], url = this.server.url): RxfleetProcess {
    return this.track(startRxfleet([...args, '--nats', url, '--nats-user', CHORIA_ADMIN.user, '--nats-password', CHORIA_ADMIN.password]));
  }

  /** Kills every process and the broker, and removes the files. */
  async stop(): Promise<void> {
    try {
      await killAll(this.processes);
      await this.admin.close().catch(() => undefined);
      await (this.cluster ?? this.server).stop();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private track(process: RxfleetProcess): RxfleetProcess {
    this.processes.push(process);
    return process;
  }

  private file(name: string, text: string): string {
    const path = join(this.dir, name);
    writeFileSync(path, text);
    return path;
  }
}

/** Makes the records stream as a site's administrator would, in the `choria` account. */
async function createRecordsStream(admin: NatsConnection, settings: RecordsStreamSettings): Promise<void> {
  const jsm = await jetstreamManager(admin);
  await jsm.streams.add({
    name: RECORDS_STREAM,
    subjects: [`${RECORDS_SUBJECT}.>`],
    storage: StorageType.File,
    discard: settings.discard === 'new' ? DiscardPolicy.New : DiscardPolicy.Old,
    max_msgs_per_subject: 50,
    num_replicas: settings.replicas ?? 1,
    ...(settings.maxMsgs !== undefined ? { max_msgs: settings.maxMsgs } : {}),
  });
}

/** The `request` lines of a `--trace` run. */
export function tracedRequests(fleet: RxfleetProcess): RequestRecord[] {
  return fleet.lines.filter((l) => l.type === 'request') as unknown as RequestRecord[];
}

/**
 * The cycles in flight at `at` (by `caller`, or by anyone): nodes with a provisioning-agent request
 * before `at` (discovery pings are not a cycle: every round pings the whole fleet) and no restart
 * from the same caller before it.
 */
export function cyclesInFlightAt(requests: RequestRecord[], at: number, caller?: string): number {
  const mine = requests.filter((r) => r.at < at && r.agent !== 'discovery' && (caller === undefined || r.caller === caller));
  const restarted = new Set(mine.filter((r) => r.action === 'restart').map((r) => r.identity));
  return new Set(mine.map((r) => r.identity).filter((id) => !restarted.has(id))).size;
}

/**
 * Waits until `caller` is mid-run by the fleet's trace: at least `done` nodes told to restart and a
 * cycle of its own under way that has not yet reached its configure, so that a kill at once still
 * finds it in flight to count duplicates against. A cycle seen merely under way may be at its
 * restart already, the trace read a moment behind the fleet: CI has killed an instance between
 * rounds, and just after its last restart, with none in flight.
 */
export async function waitMidRun(fleet: RxfleetProcess, caller: string, done: number, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    () => {
      const mine = tracedRequests(fleet).filter((r) => r.caller === caller && r.agent !== 'discovery');
      const past = (action: string): Set<string> => new Set(mine.filter((r) => r.action === action).map((r) => r.identity));
      const restarted = past('restart');
      const configured = past('configure');
      return restarted.size >= done && mine.some((r) => !restarted.has(r.identity) && !configured.has(r.identity));
    },
    `${caller} to provision ${done} nodes and be early in a cycle`,
    timeoutMs,
  );
}

/** Waits until exactly one of these leads, and returns it. */
export async function leaderOf(provisioners: ProvisionerProcess[], timeoutMs: number): Promise<ProvisionerProcess> {
  let leading: ProvisionerProcess[] = [];
  await waitFor(
    async () => {
      leading = (await Promise.all(provisioners.map(async (p) => ((await p.leads()) ? p : undefined)))).filter((p) => p !== undefined);
      return leading.length === 1;
    },
    'a single leader',
    timeoutMs,
  );
  return leading[0];
}
