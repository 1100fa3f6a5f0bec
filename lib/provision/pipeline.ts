import {
  EMPTY,
  NEVER,
  Observable,
  ObservableInput,
  SchedulerLike,
  asyncScheduler,
  catchError,
  exhaustMap,
  filter,
  from,
  map,
  merge,
  mergeMap,
  of,
  takeUntil,
  tap,
  timer,
} from 'rxjs';
import { AdmissionLedger, PauseGate, PoolResult, Refusal, admit, failed, pauseWhen, workerPool } from '@rxfleet/operators';
import type { HostTicket, Sighting, SightingSource } from './sightings/sighting';
import type { CycleOutcome, CycleResult } from './cycle/cycleResult';

/**
 * Runs a ticket's cycle under a claim on its node (active-active, DECISIONS P16): {@link NodeClaims}
 * in `claims/claims.ts`. The cycle is only subscribed while the claim is held.
 */
export interface ClaimStage {
  around(ticket: HostTicket, cycle: () => Observable<CycleOutcome>): Observable<CycleOutcome>;
  /** Emits when an RPC attempt for the node may be sent: its claim is confirmed (DECISIONS P20). */
  attemptReady?(identity: string): Observable<void>;
}

/**
 * A failing node's wait before it is admitted again (DECISIONS P22): {@link NodeBackoff} in
 * `backoff/nodeBackoff.ts`. Asked before admission, told each cycle's outcome, pruned at each round.
 */
export interface BackoffStage {
  /** Whether a sighting may go on to admission now; `until` (on the scheduler's clock) when it may not. */
  admits(
    identity: string,
    via: SightingSource,
    now: number,
  ): { readonly admit: true } | { readonly admit: false; readonly entry: { readonly until: number } };
  /** A cycle of the node ended. */
  settle(identity: string, outcome: CycleOutcome, now: number): unknown;
  /** Forgets nodes no longer sighted. */
  prune(now: number): void;
}

/** What the pipeline reports as it goes: the daemon turns these into metrics and log lines. */
export interface PipelineHooks {
  discoveryStarted?(): void;
  discoveryFailed?(error: unknown): void;
  /** A discovery round answered: how many nodes it found, and how many of them were not already held. */
  discoveryFinished?(found: number, fresh: number): void;
  /** A sighting was admitted; `ticket.value.readmission` says it superseded an older ticket. */
  admitted?(ticket: HostTicket): void;
  refused?(refusal: Refusal<Sighting, string>): void;
  /** A sighting of a failing node before its backoff ended (P22): not admitted; `until` on the scheduler's clock. */
  backedOff?(sighting: Sighting, until: number): void;
  /** A discovery tick came while paused: no round (upstream logs "Skipping discovery while paused"). */
  discoverySkipped?(): void;
  /** A sighting arrived while paused and was dropped. */
  droppedWhilePaused?(sighting: Sighting): void;
  busy?(workers: number): void;
  finished?(result: PoolResult<HostTicket, CycleResult>): void;
}

/** Everything the pipeline is made of; see {@link provisionPipeline}. */
export interface ProvisionPipelineConfig {
  /** One broadcast discovery round: the identities that answered. */
  discover: () => ObservableInput<string[]>;
  /** Identities from `startup` lifecycle events of the configured component. */
  startupEvents: Observable<string>;
  /** Identities of Incus instances that came up with an address (`incusSightings`). Default none. */
  incusSightings?: Observable<string>;
  /** Each emission is a won election: discover at once. */
  won?: Observable<unknown>;
  /** Each emission asks for a discovery round at once too (a reconnect to the broker, active-active set up). */
  discoverNow?: Observable<unknown>;
  /** Each emission is a lost election: the ledger is reset (the gate is paused by whoever owns it). */
  lost?: Observable<unknown>;
  /** The pause state every reader shares. */
  gate: PauseGate;
  /** Active-active: each node's cycle runs under a claim in a shared bucket. Default: no claims. */
  claims?: ClaimStage;
  /** The failing nodes' backoff (P22). Default none: every sighting goes on to admission, as upstream. */
  backoff?: BackoffStage;
  /** The provisioning cycle for one admitted node. */
  provision: (ticket: HostTicket) => ObservableInput<CycleOutcome>;
  /** Milliseconds between discovery rounds; also the admission window. */
  interval: number;
  workers: number;
  /** Admitted-not-started tickets at most (default 50,000, as upstream's channel). */
  queueCapacity?: number;
  /** How long a provisioned (or shut down) node keeps its key while it restarts. Default 60 s. */
  settleMs?: number;
  /**
   * How long a node whose provisioning lock another provisioner holds keeps its key. Default 2
   * minutes, the lock's own lifetime: by then the other provisioner has configured the node (it
   * leaves provisioning mode and is not seen again) or has gone away (the lock expired and this
   * instance may take the node on).
   */
  lockHoldMs?: number;
  hooks?: PipelineHooks;
  scheduler?: SchedulerLike;
  /** Supplied by the caller when it wants to read sizes (gauges); otherwise made here. */
  ledger?: AdmissionLedger<Sighting, string>;
  /** Stops the sources (discovery, events, Incus) while letting admitted work finish: graceful shutdown. */
  stop?: Observable<unknown>;
}

/**
 * The provisioner, as the design card says it: discovery ticks (every `interval`, plus one at
 * start), election-won triggers and other requests for a round at once (`discoverNow`) start
 * discovery rounds, which with lifecycle startup messages and Incus instances coming up pass
 * `pauseWhen`; each sighting goes through admission (a ledger keyed by identity, window
 * `interval`, bounded queue); the worker pool runs the provisioning cycle for each current ticket,
 * under a claim on the node when `claims` is given (active-active); the outcome frees the
 * identity's ticket now (failure, upgrade, claimed by another instance), after `settleMs` (provisioned,
 * shutdown) or after `lockHoldMs` (another provisioner holds the node's lock); a lost election
 * resets the ledger. With `backoff`, a node whose cycles keep failing is not admitted again until
 * its wait is over (P22), unless the sighting is its own startup.
 *
 * Guarantees:
 * - No discovery round starts while paused, and one round runs at a time (a tick during a round is
 *   dropped, as Go's ticker drops ticks for a busy receiver).
 * - Sightings arriving while paused are dropped, whichever source they came from.
 * - One identity has one ticket at a time, whichever sources sighted it: a node discovery, its
 *   startup event and its Incus instance all sight is admitted once (the others are refused as held).
 * - A failed discovery round is reported and the next tick tries again; it never ends the pipeline.
 * - A cycle's error is a failed outcome; it never ends the pipeline.
 * - With `backoff`, every cycle's outcome reaches it before the node's key is freed, so the next
 *   sighting of the node is decided on it; but for a cycle that ends while paused, which the pause
 *   stopped.
 * - When `stop` emits, no new round starts and no sighting is admitted; the result completes once
 *   the work already admitted has finished.
 */
export function provisionPipeline(config: ProvisionPipelineConfig): Observable<PoolResult<HostTicket, CycleResult>> {
  const { startupEvents, lost = EMPTY, gate, backoff, interval, workers, hooks = {}, scheduler = asyncScheduler } = config;
  const ledger =
    config.ledger ??
    new AdmissionLedger<Sighting, string>({
      key: (s) => s.identity,
      window: interval,
      capacity: config.queueCapacity ?? 50_000,
      scheduler,
    });
  const upgrades = new RecentUpgrades();

  const discoveryRounds$ = discoveryRounds(config, { ledger, upgrades, hooks, scheduler });
  const eventSightings$ = startupEvents.pipe(
    tap((identity) => upgrades.started(identity)),
    map((identity): Sighting => ({ identity, via: 'event' })),
  );
  const incusSightings$ = (config.incusSightings ?? EMPTY).pipe(map((identity): Sighting => ({ identity, via: 'incus' })));

  const sightings$ = merge(discoveryRounds$, eventSightings$, incusSightings$).pipe(
    pauseWhen(gate.paused$, { onDrop: (s) => hooks.droppedWhilePaused?.(s) }),
    takeUntil(config.stop ?? NEVER),
  );

  const pastBackoff = (s: Sighting): boolean => {
    if (backoff === undefined) return true;
    const verdict = backoff.admits(s.identity, s.via, scheduler.now());
    if (!verdict.admit) hooks.backedOff?.(s, verdict.entry.until);
    return verdict.admit;
  };

  return sightings$.pipe(
    // A failing node waits out its backoff before admission sees it (P22).
    filter(pastBackoff),
    // Marked just before the decision, in the same turn, so the mark is what the ledger decides on.
    map((s): Sighting => (ledger.holder(s.identity) === undefined ? s : { ...s, readmission: true })),
    admit(ledger, { reset: lost, onRefuse: (r) => hooks.refused?.(r) }),
    tap((ticket) => hooks.admitted?.(ticket)),
    workerPool<HostTicket, CycleResult>({
      concurrency: workers,
      work: cycleWork(config, { upgrades, scheduler }),
      onBusy: (n) => hooks.busy?.(n),
      // A provisioned node's delayed freeing is one entry in the pool's ring for its delay, not a
      // timer of its own (the pool keeps one timer per distinct delay).
      scheduler,
    }),
    tap((result) => hooks.finished?.(result)),
  );
}

/**
 * The discovery rounds as sightings: one at every tick (and at start), at each won election and at
 * each request for a round at once; none while paused (the tick is dropped, told to
 * `discoverySkipped`), one at a time (a tick during a round is dropped). A failed round is told to
 * `discoveryFailed` and says nothing. A round prunes the backoff's table first.
 */
function discoveryRounds(
  config: ProvisionPipelineConfig,
  {
    ledger,
    upgrades,
    hooks,
    scheduler,
  }: { ledger: AdmissionLedger<Sighting, string>; upgrades: RecentUpgrades; hooks: PipelineHooks; scheduler: SchedulerLike },
): Observable<Sighting> {
  const { discover, won = EMPTY, discoverNow = EMPTY, gate, backoff, interval } = config;
  return merge(timer(0, interval, scheduler), won, discoverNow).pipe(
    pauseWhen(gate.paused$, { onDrop: () => hooks.discoverySkipped?.() }),
    exhaustMap(() => {
      hooks.discoveryStarted?.();
      const startedAt = scheduler.now();
      backoff?.prune(startedAt);
      return from(discover()).pipe(
        tap((identities) =>
          hooks.discoveryFinished?.(identities.length, identities.filter((id) => ledger.holder(id) === undefined).length),
        ),
        map((identities) => identities.filter((identity) => !upgrades.answeredBefore(identity, startedAt))),
        catchError((error: unknown) => {
          hooks.discoveryFailed?.(error);
          return EMPTY;
        }),
      );
    }),
    mergeMap((identities) => identities.map((identity): Sighting => ({ identity, via: 'discovery' }))),
  );
}

/**
 * One ticket's work: its cycle, under a claim on the node when there are claims; an error made a
 * failed outcome here, so that the backoff is told every outcome (but for a cycle that ended while
 * paused, which the pause stopped); and how long the node then keeps its key. An upgraded node
 * restarts still in provisioning mode and must be provisioned again at once; a configured or
 * shut-down node keeps its key for `settleMs` while it goes away; a locked one for `lockHoldMs`,
 * while the other provisioner's lock lasts.
 */
function cycleWork(
  config: ProvisionPipelineConfig,
  { upgrades, scheduler }: { upgrades: RecentUpgrades; scheduler: SchedulerLike },
): (ticket: HostTicket) => Observable<CycleOutcome> {
  const { gate, backoff, provision, claims } = config;
  const settleMs = config.settleMs ?? 60_000;
  const lockHoldMs = config.lockHoldMs ?? 120_000;
  const holdFor: Record<CycleResult, number> = { provisioned: settleMs, shutdown: settleMs, upgraded: 0, locked: lockHoldMs, claimed: 0 };
  const cycle = (ticket: HostTicket) => (): Observable<CycleOutcome> => from(provision(ticket));
  return (ticket) =>
    (claims === undefined ? cycle(ticket)() : claims.around(ticket, cycle(ticket))).pipe(
      // The pool would make an error a failed outcome too; made here, the backoff sees it.
      catchError((error: unknown) => of(failed(error))),
      map((outcome): CycleOutcome => {
        // A cycle that ends while the instance is paused (a lost election, a shutdown) was
        // stopped by the pause: it says nothing about its node.
        if (!gate.paused) backoff?.settle(ticket.key, outcome, scheduler.now());
        if (outcome.status !== 'done') return outcome;
        if (outcome.value === 'upgraded') upgrades.upgraded(ticket.key, scheduler.now());
        const hold = holdFor[outcome.value];
        return hold > 0 ? { status: 'done', value: outcome.value, freeAfter: hold } : { status: 'done', value: outcome.value };
      }),
    );
}

/**
 * The nodes upgraded lately. A round's answers may predate an upgrade that ended while the round
 * was open: the node answered at its old version and restarts in a moment, and its startup event
 * will announce it. Admitted, such an answer would upgrade it a second time. So a node's upgrade is
 * remembered until a round that began after it, or its startup event, says where it is now.
 */
class RecentUpgrades {
  private readonly at = new Map<string, number>();

  upgraded(identity: string, now: number): void {
    this.at.set(identity, now);
  }

  /** The node's startup event: it says where the node is now. */
  started(identity: string): void {
    this.at.delete(identity);
  }

  /** Whether the node's answer to a round begun at `roundStartedAt` predates its upgrade; a later round's forgets it. */
  answeredBefore(identity: string, roundStartedAt: number): boolean {
    const at = this.at.get(identity);
    if (at === undefined) return false;
    if (roundStartedAt <= at) return true;
    this.at.delete(identity);
    return false;
  }
}
