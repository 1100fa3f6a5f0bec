/**
 * The enricher's one owner: the model, the archive, the ordered line, the reads in flight and the
 * repair schedule all live here, and change only inside its inbox's tasks.
 */
import { Subject, SchedulerLike, Subscription, Subscriber } from 'rxjs';
import { OrderedLine } from '@rxfleet/operators';
import { pacedSweep, SweepEvent } from '@rxfleet/operators';
import { ReadResult, readPerKey } from '@rxfleet/operators';
import { RepairReport, retryLadder } from '@rxfleet/operators';
import { Logger } from '../logger';
import { IncusNetwork, IncusProject } from '../incus/api';
import { Archive } from './Archive';
import { ColdStoreDocument, modelFromSnapshot, snapshotModel } from './coldStoreDocument';
import { awaitingAddress, distillInstance, isIncomplete } from './distillInstance';
import { EnrichedEvent, EventOrigin, READ_FAILED, newEvent, withFailed, withInstance, withNetwork, withProject } from './event';
import { FleetModel, InstanceKey } from './FleetModel';
import { KeyedTimers } from './KeyedTimers';
import { Mailbox } from './Mailbox';
import { DropReason, EnricherMetrics } from './metrics';
import { ObservableIncusReader, isNotFound } from './observableReader';
import { InstanceAnswer } from './readInstance';
import {
  InstanceRead,
  NetworkFanOut,
  NetworkRead,
  ProjectRead,
  ReadAnswer,
  ReadRequest,
  instanceKey,
  networkKey,
  parseInstanceKey,
  performRead,
  projectKey,
  supersedes,
} from './readRequests';
import { InstanceRecord, networkRecord } from './records';
import { ProjectOutcome, RoundContext, RoundHost, RoundItem, roundScript } from './round';
import { ProjectsServed, servedByConfig, servedByName } from './servedProjects';
import { Enrichment, WantedTable, wants } from './wanted';

/** What the core runs with. */
export interface EnricherCoreOptions {
  reader: ObservableIncusReader;
  wanted: WantedTable;
  served: ProjectsServed;
  workers: number;
  ipTimeout: number;
  readDelay: number;
  sweepInterval: number;
  ttl: number;
  configExclude: readonly string[];
  scheduler: SchedulerLike;
  logger: Logger;
  metrics: EnricherMetrics;
  /** What the last run stored (E1): the model starts from it, warm. */
  initial?: ColdStoreDocument;
  /** Repair schedule (E2); defaults 1 s × 3, then 5 s. */
  repair?: { fast: number; fastAttempts: number; slow: number };
  /** Ms to wait after the n-th failed round in a row (E3); default 5 s doubling to 5 min. */
  roundFailureDelay?: (failures: number) => number;
  /** Told whenever `warm` may have changed and when a round ends. */
  onChange?: (change: { warm: boolean; roundEnded?: { ok: boolean } }) => void;
}

/** How an instance read was absorbed. */
type Absorbed = { landed: false } | { landed: true; record: InstanceRecord | undefined };

/**
 * Routes each event (§3.3 of the reference, in order), reads through one read per key, settles
 * events in place, releases them in arrival order, repairs what failed, and runs the rounds.
 *
 * Everything below runs inside `mailbox` tasks; callbacks from reads, timers and the round only
 * post tasks. Emitted events go to `out` as the line releases them.
 */
export class EnricherCore implements RoundHost {
  private model: FleetModel;
  private readonly archive = new Archive();
  private readonly line = new OrderedLine<EnrichedEvent>();
  private readonly mailbox: Mailbox;
  private readonly subscription = new Subscription();
  private readonly requests = new Subject<ReadRequest>();
  private readonly cancels = new Subject<string>();
  private readonly reports = new Subject<RepairReport<string>>();
  private readonly restarts = new Subject<void>();
  private readonly ttlTimers: KeyedTimers<string>;
  /** Instance reads held until the model is warm, by key, in arrival order. */
  private readonly held = new Map<string, InstanceRead[]>();
  /** Instance reads parked until their project's read lands, by project. */
  private readonly parked = new Map<string, InstanceRead[]>();
  /** Projects with a read in flight. */
  private readonly projectReads = new Set<string>();
  /**
   * The `seq` at which each key was last deleted (E7): a read asked for before it is stale. Only
   * needed until the inbox next runs dry: by then every read of the key asked for before the
   * delete has been cancelled or has landed, so the map is emptied there rather than growing with
   * every name ever deleted.
   */
  private readonly deletedAt = new Map<string, number>();
  /** Projects known not to be served (E6). */
  private readonly unserved = new Set<string>();
  /**
   * For each key with a read running, the `seq` the enricher had reached when that read went to
   * the server: a request asked for at or after it joined a read that could not have seen what
   * the request is about.
   */
  private readonly readStartedAt = new Map<string, number>();
  private seq = 0;
  private warmed = false;
  private networksReady = false;
  private sweeping: Subscription | undefined;
  private round: RoundContext | undefined;
  private finished = false;

  constructor(
    private readonly options: EnricherCoreOptions,
    private readonly out: Subscriber<EnrichedEvent>,
  ) {
    this.mailbox = new Mailbox(
      () => this.afterEach(),
      (error) => options.logger.error({ err: error }, 'enricher task failed (a bug): carrying on'),
      () => this.deletedAt.clear(),
    );
    this.ttlTimers = new KeyedTimers(options.scheduler, (key) => this.post(() => this.reRead(key, 'ttl')));
    this.model = new FleetModel();
    if (options.initial !== undefined) this.loadInitial(options.initial);
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  /** Subscribes the reads and the repair schedule; call once, before anything is posted. */
  start(): void {
    const { reader, workers, scheduler, ipTimeout, metrics } = this.options;
    this.subscription.add(
      this.requests
        .pipe(
          readPerKey<ReadRequest, string, ReadAnswer>({
            key: (request) => request.key,
            read: (request) => {
              this.readStartedAt.set(request.key, this.seq);
              return performRead(reader, request, { ipTimeout, scheduler });
            },
            supersedes,
            cancel: this.cancels,
            concurrency: workers,
          }),
        )
        .subscribe((result) => {
          // Taken now: once the inbox runs the landing, another read of the key may have started.
          const startedAt = this.readStartedAt.get(result.key);
          this.readStartedAt.delete(result.key);
          this.post(() => this.land(result, startedAt));
        }),
    );
    const repair = this.options.repair ?? { fast: 1000, fastAttempts: 3, slow: 5000 };
    this.subscription.add(
      this.reports
        .pipe(retryLadder<string>({ ...repair, scheduler, onPendingChange: (n) => metrics.repairsPending.set(n) }))
        .subscribe((key) => this.post(() => this.reRead(key, 'repair'))),
    );
    this.subscription.add(() => this.ttlTimers.clear());
    this.post(() => undefined);
  }

  /** Runs `task` in the owner's inbox. */
  post(task: () => void): void {
    if (this.finished) return;
    this.mailbox.post(task);
  }

  /** Whether the model can place instances on networks: the first round's networks landed, or a cold store was loaded. */
  get warm(): boolean {
    return this.warmed;
  }

  /** Events in the line now. */
  get lineLength(): number {
    return this.line.length;
  }

  /** Sizes of the model, for status pages. */
  sizes(): { projects: number; instances: number; networks: number } {
    return { projects: this.model.projectCount, instances: this.model.instanceCount, networks: this.model.networkCount };
  }

  /** The model as a cold store document if anything changed since the last one was taken. */
  snapshotIfDirty(): ColdStoreDocument | undefined {
    if (!this.model.dirty) return undefined;
    this.model.dirty = false;
    return snapshotModel(this.model);
  }

  /**
   * Hands on the whole line in arrival order, settled or not (an event whose read has not landed
   * goes out as it arrived, without a failure mark; trashed ones stay skipped), stops every read,
   * timer and round, and completes the output. What was admitted is better handed on unanswered
   * than lost.
   */
  drain(): void {
    if (this.finished) return;
    this.emit(this.line.drain());
    this.stop();
    this.out.complete();
  }

  /** Stops everything without handing anything on (the output was unsubscribed). */
  stop(): void {
    this.finished = true;
    this.sweeping?.unsubscribe();
    this.subscription.unsubscribe();
    this.options.metrics.lineLength.set(0);
  }

  private afterEach(): void {
    if (this.finished) return;
    this.emit(this.line.release());
    const { metrics } = this.options;
    metrics.projects.set(this.model.projectCount);
    metrics.instances.set(this.model.instanceCount);
    metrics.networks.set(this.model.networkCount);
    metrics.lineLength.set(this.line.length);
  }

  private emit(events: readonly EnrichedEvent[]): void {
    for (const event of events) {
      this.options.metrics.eventsEmitted.labels(event.status).inc();
      this.out.next(event);
    }
  }

  private drop(reason: DropReason): void {
    this.options.metrics.eventsDropped.labels(reason).inc();
  }

  private loadInitial(document: ColdStoreDocument): void {
    this.model = modelFromSnapshot(document);
    // Seeded as what was last said about each instance, so the first round's reads of an
    // unchanged fleet are silent rather than a restart re-announcing every instance.
    for (const [at, record] of this.model.instances()) {
      this.archive.file(this.attachProject(withInstance(this.invented('instance-updated', at, 'round'), record)));
    }
    this.warmed = true;
    this.networksReady = true;
  }

  // ---- connection and rounds ---------------------------------------------------------------

  /** The event stream (re)connected: the first time starts the rounds, every later time runs a fast round at once. */
  connected(): void {
    if (this.sweeping !== undefined) {
      this.restarts.next();
      return;
    }
    const { readDelay, sweepInterval, scheduler, reader, roundFailureDelay } = this.options;
    this.sweeping = pacedSweep<RoundItem>({
      list: (n) => {
        const round = new RoundContext(n);
        this.round = round;
        return roundScript(round, this, reader);
      },
      delay: readDelay,
      interval: sweepInterval,
      restart: this.restarts,
      scheduler,
      ...(roundFailureDelay !== undefined ? { failureDelay: roundFailureDelay } : {}),
    }).subscribe((event) => this.post(() => this.sweepEvent(event)));
  }

  private sweepEvent(event: SweepEvent<RoundItem>): void {
    const round = this.round;
    if (event.kind === 'end') {
      this.options.metrics.sweeps.labels(event.ok ? 'success' : 'failed').inc();
      if (event.ok) this.options.logger.info({ round: event.round, ...this.sizes() }, 'round over the fleet done');
      else this.options.logger.warn({ round: event.round, err: event.error }, 'round over the fleet failed: retrying soon');
      this.options.onChange?.({ warm: this.warmed, roundEnded: { ok: event.ok } });
      return;
    }
    if (round === undefined || round.number !== event.round) return;
    const item = event.item;
    if (item.kind === 'project') {
      const byName = servedByName(this.options.served, item.name);
      if (byName === false) this.projectUnserved(item.name, round);
      else this.issueProjectRead(item.name, round);
    } else if (item.kind === 'network') {
      this.issueNetworkRead(item.owner, item.owner, item.name, { fanOut: 'if-changed', round });
    } else if (!this.unserved.has(item.project)) {
      this.accept(newEvent({ action: 'instance-updated', project: item.project, name: item.name, origin: 'round', received: this.now() }));
    }
  }

  /** @internal RoundHost */
  projectNames(): string[] {
    return this.model.projectNames();
  }

  /** @internal RoundHost */
  networkNames(owner: string): string[] {
    return this.model.networkNames(owner);
  }

  /** @internal RoundHost */
  instanceNames(project: string): string[] {
    return this.model.instanceNames(project);
  }

  /** @internal RoundHost: what the model held when the listing went out and the listing lacks has gone (E4: its instances leave as deletes). */
  projectsListed(round: RoundContext, listed: readonly string[], recorded: readonly string[]): void {
    const present = new Set(listed);
    this.post(() => {
      if (round !== this.round) return;
      for (const project of recorded) if (!present.has(project)) this.pruneProject(project);
    });
  }

  /** @internal RoundHost */
  networksListed(round: RoundContext, owner: string, listed: readonly string[], recorded: readonly string[]): void {
    const present = new Set(listed);
    this.post(() => {
      if (round !== this.round) return;
      for (const name of recorded) if (!present.has(name)) this.model.deleteNetwork(owner, name);
    });
  }

  /** @internal RoundHost: each held instance the listing lacks leaves as an `instance-deleted`. */
  instancesListed(round: RoundContext, project: string, listed: readonly string[], recorded: readonly string[]): void {
    const present = new Set(listed);
    this.post(() => {
      if (round !== this.round) return;
      for (const name of recorded) {
        if (!present.has(name) && this.model.instance(project, name) !== undefined) this.prunedInstance(project, name);
      }
    });
  }

  /** @internal RoundHost */
  networksLanded(round: RoundContext): void {
    this.post(() => {
      if (round !== this.round) return;
      this.networksReady = true;
      this.maybeWarm();
    });
  }

  /** @internal RoundHost */
  listingFailed(round: RoundContext, what: string, error: unknown): void {
    this.options.logger.warn({ round: round.number, err: error }, `listing ${what} failed: skipped this round, nothing pruned`);
  }

  // Warm needs the wire map whole and every project read landed, so what was held goes out with
  // its networks and its project's configuration. Once warm, never cold again: a reconnect leaves
  // the wires as stale as everything else, which is what the round after it is for.
  private maybeWarm(): void {
    if (this.warmed || !this.networksReady || this.projectReads.size > 0) return;
    this.warmed = true;
    this.options.logger.info({ held: this.held.size }, 'warm: releasing held instance reads');
    const held = [...this.held.values()];
    this.held.clear();
    for (const reads of held) {
      // The strongest first, so the key's read is issued once rather than issued and superseded.
      const ordered = [...reads].sort((a, b) => Number(b.waitForRunning) - Number(a.waitForRunning));
      for (const read of ordered) this.route(read);
    }
    this.options.onChange?.({ warm: true });
  }

  // ---- accepting events --------------------------------------------------------------------

  /** Takes one event (live, from a round, or invented here) through the routing of §3.3. */
  accept(input: EnrichedEvent): void {
    const { project, name } = input;
    if (input.origin === 'incus' && this.knownUnserved(project)) {
      this.drop('unserved');
      return;
    }
    const event = this.attachProject(input);
    this.maybeReadProject(event);
    if (event.status !== 'ok' || name === '') {
      this.line.push(event, true);
      return;
    }
    switch (event.kind) {
      case 'network':
        this.acceptNetwork(event);
        return;
      case 'profile':
        this.line.push(event, true);
        if (event.action !== 'profile-deleted') this.fanOut(this.model.instancesUsingProfile(project, name), 'fan-out');
        return;
      case 'project':
        this.acceptProject(event);
        return;
      case 'instance':
        this.acceptInstance(event);
        return;
      default:
        this.line.push(event, true);
    }
  }

  // E6: decided by name where the setting can (a list), else by what a read found, else by the
  // configuration held; `undefined` while nothing tells.
  private servedNow(project: string): boolean | undefined {
    const byName = servedByName(this.options.served, project);
    if (byName !== undefined) return byName;
    if (this.unserved.has(project)) return false;
    const config = this.model.projectConfig(project);
    return config == null ? undefined : servedByConfig(this.options.served, project, config);
  }

  private knownUnserved(project: string): boolean {
    return this.servedNow(project) === false;
  }

  private attachProject(event: EnrichedEvent): EnrichedEvent {
    if (!wants(this.options.wanted, event.action, Enrichment.project)) return event;
    const config = this.model.projectConfig(event.project);
    // A project not read yet is left unenriched rather than enriched with nothing, so a consumer
    // can tell "sets none" from "not read".
    return config == null ? event : withProject(event, config);
  }

  private maybeReadProject(event: EnrichedEvent): void {
    const { project } = event;
    if (project === '' || this.model.projectConfig(project) != null || this.unserved.has(project)) return;
    const forConfig = wants(this.options.wanted, event.action, Enrichment.project);
    const forServed = this.servedNow(project) === undefined;
    if (forConfig || forServed) this.issueProjectRead(project);
  }

  private acceptInstance(event: EnrichedEvent): void {
    const { project, name, action } = event;
    if (action === 'instance-deleted') {
      this.forgetInstance(project, name);
      this.line.push(event, true);
      return;
    }
    if (action === 'instance-renamed' && event.oldName !== undefined) this.forgetInstance(project, event.oldName);
    // A round's name, a repair or a fan-out always reads: keeping the model true is their whole job.
    const bits = event.origin === 'incus' ? (this.options.wanted.get(action)?.enrich ?? 0) : Enrichment.instance | Enrichment.interfaces;
    if ((bits & (Enrichment.instance | Enrichment.interfaces)) === 0) {
      this.line.push(event, true);
      return;
    }
    const place = this.line.push(event);
    this.issueInstanceRead(project, name, event, {
      place,
      waitForRunning: action === 'instance-started',
      wantInterfaces: (bits & Enrichment.interfaces) !== 0,
    });
  }

  private acceptNetwork(event: EnrichedEvent): void {
    const { project, name, action } = event;
    const owner = this.model.networkOwner(project);
    if (event.oldName !== undefined) this.forgetNetwork(owner, event.oldName);
    if (action === 'network-deleted') {
      this.forgetNetwork(owner, name);
      this.line.push(event, true);
      return;
    }
    // E8: a wanted network waits for its read and travels with it.
    if (wants(this.options.wanted, action, Enrichment.network)) {
      this.issueNetworkRead(project, owner, name, { fanOut: 'always', event, place: this.line.push(event) });
    } else {
      this.line.push(event, true);
      this.issueNetworkRead(project, owner, name, { fanOut: 'always' });
    }
  }

  private acceptProject(event: EnrichedEvent): void {
    const { name, action } = event;
    if (action === 'project-deleted') {
      this.pruneProject(name);
      this.line.push(event, true);
      return;
    }
    this.line.push(event, true);
    if (action === 'project-updated' || action === 'project-created') this.issueProjectRead(name);
  }

  // A delete deletes: the model forgets the instance and every read of it asked for before now
  // becomes stale (E7), so an answer that lands after the delete cannot put it back.
  private forgetInstance(project: string, name: string): void {
    const key = instanceKey(project, name);
    this.deletedAt.set(key, this.seq++);
    this.cancels.next(key);
    const held = this.held.get(key);
    if (held !== undefined) {
      this.held.delete(key);
      this.settleBare(held);
    }
    const parked = this.parked.get(project);
    if (parked !== undefined) {
      this.settleBare(parked.filter((read) => read.key === key));
      const rest = parked.filter((read) => read.key !== key);
      if (rest.length > 0) this.parked.set(project, rest);
      else this.parked.delete(project);
    }
    this.reports.next({ key, ok: true });
    this.ttlTimers.cancel(key);
    this.model.deleteInstance(project, name);
    this.archive.forget(project, name);
  }

  private forgetNetwork(owner: string, name: string): void {
    const on = this.model.instancesOn(owner, name);
    this.model.deleteNetwork(owner, name);
    this.fanOut(on, 'fan-out');
  }

  // E4: a project that went away takes its instances with it, each announced as a delete.
  private pruneProject(project: string): void {
    for (const name of this.model.instanceNames(project)) this.prunedInstance(project, name);
    this.model.deleteProject(project);
    this.archive.forgetProject(project);
  }

  private prunedInstance(project: string, name: string): void {
    this.accept(newEvent({ action: 'instance-deleted', project, name, origin: 'prune', received: this.now() }));
  }

  private projectUnserved(project: string, round?: RoundContext): void {
    const wasServed = !this.unserved.has(project);
    this.unserved.add(project);
    if (wasServed && this.model.hasProject(project)) {
      this.options.logger.info({ project }, 'project no longer served: its instances leave as deletes');
      this.pruneProject(project);
    }
    const parked = this.parked.get(project) ?? [];
    this.parked.delete(project);
    for (const read of parked) this.trash(read, 'unserved');
    if (round !== undefined && round === this.round) round.projectLanded(project, { status: 'unserved' });
  }

  // ---- issuing reads -----------------------------------------------------------------------

  private now(): number {
    return this.options.scheduler.now();
  }

  private invented(action: string, at: InstanceKey, origin: EventOrigin): EnrichedEvent {
    return newEvent({ action, project: at.project, name: at.name, origin, received: this.now() });
  }

  private issueInstanceRead(
    project: string,
    name: string,
    event: EnrichedEvent,
    how: { place?: InstanceRead['place']; waitForRunning: boolean; wantInterfaces: boolean },
  ): void {
    const key = instanceKey(project, name);
    const read: InstanceRead = {
      kind: 'instance',
      key,
      seq: this.seq++,
      project,
      name,
      event,
      waitForRunning: how.waitForRunning,
      wantInterfaces: how.wantInterfaces,
      ...(how.place !== undefined ? { place: how.place } : {}),
    };
    if (!this.warmed) {
      // Cold: joined like a read in flight on the key, never submitted until the wires are known.
      const held = this.held.get(key);
      if (held === undefined) this.held.set(key, [read]);
      // A repair or fan-out adds nothing to a key already held: the held read answers it, and
      // while the daemon stays unreachable the repairs would otherwise pile up behind it.
      else if (read.place !== undefined || held.every((other) => other.place !== undefined)) held.push(read);
      return;
    }
    this.route(read);
  }

  private route(read: InstanceRead): void {
    const { project } = read;
    if (this.projectReads.has(project) && this.model.projectConfig(project) == null && wants(this.options.wanted, read.event.action, Enrichment.project)) {
      // The project's configuration is on its way: waiting for it makes one right event rather
      // than an unlabelled one followed by a fan-out's correction.
      const parked = this.parked.get(project);
      if (parked === undefined) this.parked.set(project, [read]);
      else parked.push(read);
      return;
    }
    this.requests.next(read);
  }

  /** Re-reads the instances at `keys` for events invented here, with no place in the line. */
  private fanOut(keys: readonly InstanceKey[], origin: EventOrigin): void {
    for (const at of keys) {
      if (this.knownUnserved(at.project)) continue;
      this.issueInstanceRead(at.project, at.name, this.invented('instance-updated', at, origin), { waitForRunning: false, wantInterfaces: true });
    }
  }

  private reRead(key: string, origin: 'repair' | 'ttl'): void {
    this.fanOut([parseInstanceKey(key)], origin);
  }

  private issueNetworkRead(
    project: string,
    owner: string,
    name: string,
    how: { fanOut: NetworkFanOut; event?: EnrichedEvent; place?: NetworkRead['place']; round?: RoundContext },
  ): void {
    const read: NetworkRead = { kind: 'network', key: networkKey(owner, name), seq: this.seq++, project, owner, name, ...how };
    this.requests.next(read);
  }

  private issueProjectRead(name: string, round?: RoundContext): void {
    this.projectReads.add(name);
    const read: ProjectRead = { kind: 'project', key: projectKey(name), seq: this.seq++, name, ...(round !== undefined ? { round } : {}) };
    this.requests.next(read);
  }

  // ---- reads landing -----------------------------------------------------------------------

  private land(landed: ReadResult<ReadRequest, string, ReadAnswer>, startedAt: number | undefined): void {
    const result = this.answerOnlyEarlier(landed, startedAt);
    const lead = result.requests[0];
    if (lead === undefined) return;
    if (lead.kind === 'instance') this.landInstance(result as ReadResult<InstanceRead, string, InstanceAnswer>);
    else if (lead.kind === 'network') this.landNetwork(result as ReadResult<NetworkRead, string, IncusNetwork>);
    else this.landProject(result as ReadResult<ProjectRead, string, IncusProject>);
  }

  /**
   * Coalescing must not answer a request with what was read before it was asked: an
   * `instance-updated` that joined a start's read (which polls for an address for seconds) would
   * go out with the configuration from before the update, be found unchanged, and the update
   * would be lost until the next round. So an answer is kept for the requests asked before its
   * read went out; those asked later are asked again, together, in arrival order, and get a read
   * of their own once this one has landed. The read is still shared by everything that arrives
   * while it waits for a worker, and a burst costs at most one follow-up read.
   *
   * Project reads are left joined: their rounds count each request once, and the window is one
   * short call.
   */
  private answerOnlyEarlier(result: ReadResult<ReadRequest, string, ReadAnswer>, startedAt: number | undefined): ReadResult<ReadRequest, string, ReadAnswer> {
    if (result.status !== 'answered' || startedAt === undefined || result.requests[0]?.kind === 'project') return result;
    const late = result.requests.filter((read) => read.seq >= startedAt);
    if (late.length === 0) return result;
    for (const read of late) this.requests.next(read);
    return { ...result, requests: result.requests.filter((read) => read.seq < startedAt) };
  }

  private settleBare(reads: readonly InstanceRead[]): void {
    for (const read of reads) if (read.place !== undefined) this.line.settle(read.place, read.event);
  }

  private trash(read: InstanceRead, reason: DropReason): void {
    if (read.place === undefined) return;
    if (this.line.trash(read.place)) this.drop(reason);
  }

  private landInstance(result: ReadResult<InstanceRead, string, InstanceAnswer>): void {
    const reads = [...result.requests].sort((a, b) => a.seq - b.seq);
    const { project, name } = reads[0];
    const deletedAt = this.deletedAt.get(result.key) ?? -1;
    const current = reads.filter((read) => read.seq > deletedAt);
    // Asked for before a delete of the key (E7): they happened, but what was read is not theirs
    // to keep. They go out as they arrived; nothing is stored.
    this.settleBare(reads.filter((read) => read.seq < deletedAt));
    if (result.status === 'cancelled' || current.length === 0) {
      this.settleBare(current);
      return;
    }
    if (this.knownUnserved(project)) {
      for (const read of current) this.trash(read, 'unserved');
      return;
    }
    const absorbed = this.absorbInstance(project, name, result);
    for (const read of current) {
      if (read.place === undefined) continue;
      if (!absorbed.landed) {
        this.line.settle(read.place, withFailed(read.event, READ_FAILED));
      } else if (absorbed.record === undefined) {
        this.line.settle(read.place, read.event);
      } else {
        const enriched = this.attachProject(withInstance(read.event, absorbed.record));
        if (this.archive.changed(enriched)) this.line.settle(read.place, enriched);
        else this.trash(read, 'unchanged');
      }
    }
    // Invented events have no place to keep: they join the back of the line only if what they
    // found is news, compared after the real events above filed theirs, so a live event and a
    // fan-out on one key stay one event.
    if (!absorbed.landed || absorbed.record === undefined) return;
    for (const read of current) {
      if (read.place !== undefined) continue;
      const enriched = this.attachProject(withInstance(read.event, absorbed.record));
      if (this.archive.changed(enriched)) this.line.push(enriched, true);
    }
  }

  // One instance read is absorbed in one place, whoever asked: the patch and what the key is
  // owed next are decided together.
  private absorbInstance(project: string, name: string, result: ReadResult<InstanceRead, string, InstanceAnswer>): Absorbed {
    const key = result.key;
    if (result.status === 'failed') {
      if (isNotFound(result.error)) {
        // Left in the model: the delete event, or the next round's prune if that event was
        // lost, removes it and announces it exactly once.
        this.reports.next({ key, ok: true });
        this.ttlTimers.cancel(key);
        return { landed: true, record: undefined };
      }
      this.options.logger.debug({ project, name, err: result.error }, 'instance read failed: reading it again soon');
      this.reports.next({ key, ok: false });
      return { landed: false };
    }
    if (result.status !== 'answered') return { landed: false };
    const { instance, state } = result.value;
    const distilled = distillInstance(instance, state, (p, n) => this.model.resolveNetwork(p, n), { configExclude: this.options.configExclude });
    if (isIncomplete(distilled)) {
      // A wire nothing has read: what could be placed is a subset of where the instance sits,
      // and storing it would make that permanent. Read the wire, read the instance again.
      this.options.logger.debug({ project, name, network: distilled.network }, 'instance on a network not read yet: reading both again');
      const owner = this.model.networkOwner(project);
      this.issueNetworkRead(project, owner, distilled.network, { fanOut: 'if-changed' });
      this.reports.next({ key, ok: false });
      return { landed: false };
    }
    this.model.setInstance(project, name, distilled);
    if (awaitingAddress(instance, state, distilled)) {
      this.reports.next({ key, ok: false });
    } else {
      this.reports.next({ key, ok: true });
      if (this.options.ttl > 0) this.ttlTimers.schedule(key, this.options.ttl);
    }
    return { landed: true, record: distilled };
  }

  private landNetwork(result: ReadResult<NetworkRead, string, IncusNetwork>): void {
    const reads = [...result.requests].sort((a, b) => a.seq - b.seq);
    const { owner, name } = reads[0];
    for (const read of reads) if (read.round !== undefined && read.round === this.round) read.round.networkLanded();
    if (result.status !== 'answered') {
      const gone = result.status === 'failed' && isNotFound(result.error);
      if (gone) this.forgetNetwork(owner, name);
      else if (result.status === 'failed') this.options.logger.debug({ owner, name, err: result.error }, 'network read failed');
      for (const read of reads) {
        if (read.place === undefined || read.event === undefined) continue;
        this.line.settle(read.place, gone ? read.event : withFailed(read.event, READ_FAILED));
      }
      return;
    }
    const record = networkRecord(result.value, owner);
    const changed = this.model.setNetwork(record);
    for (const read of reads) {
      if (read.place === undefined || read.event === undefined) continue;
      this.line.settle(read.place, this.attachProject(withNetwork(read.event, record)));
    }
    // A subnet moving changes every record on the wire; a round's read that found nothing new
    // has nothing to re-read.
    if (reads.some((read) => read.fanOut === 'always') || changed) this.fanOut(this.model.instancesOn(record.project, record.name), 'fan-out');
  }

  private landProject(result: ReadResult<ProjectRead, string, IncusProject>): void {
    const name = result.requests[0].name;
    this.projectReads.delete(name);
    let outcome: ProjectOutcome;
    if (result.status === 'answered') {
      const config = result.value.config ?? {};
      if (!servedByConfig(this.options.served, name, config)) {
        this.projectUnserved(name);
        outcome = { status: 'unserved' };
      } else {
        this.unserved.delete(name);
        const hadInstances = this.model.instanceNames(name);
        const changed = this.model.setProjectConfig(name, config);
        this.releaseParked(name);
        // Labels changed under instances already said: each says it again with the new ones.
        if (changed && wants(this.options.wanted, 'instance-updated', Enrichment.project)) {
          this.fanOut(hadInstances.map((n) => ({ project: name, name: n })), 'fan-out');
        }
        outcome = { status: 'served', config };
      }
    } else if (result.status === 'failed' && isNotFound(result.error)) {
      this.pruneProject(name);
      this.releaseParked(name);
      outcome = { status: 'gone' };
    } else {
      this.options.logger.debug({ project: name, err: result.status === 'failed' ? result.error : 'cancelled' }, 'project read failed');
      this.releaseParked(name);
      outcome = { status: 'failed', config: this.model.projectConfig(name) };
    }
    for (const read of result.requests) if (read.round !== undefined && read.round === this.round) read.round.projectLanded(name, outcome);
    this.maybeWarm();
  }

  private releaseParked(project: string): void {
    const parked = this.parked.get(project);
    if (parked === undefined) return;
    this.parked.delete(project);
    for (const read of parked) this.requests.next(read);
  }

  /** @internal for specs: the model as it is. */
  get fleet(): FleetModel {
    return this.model;
  }
}
