/**
 * A node's claim as a state machine (DECISIONS P16, P20): {@link stepClaim} is everything a claim
 * decides, as a pure function from its state and what just happened to its next state and what to
 * do (effects). It reads no clock, bucket or timer: `driveClaim` (claimDriver.ts) carries the
 * effects out and feeds their answers back in as events. The table in
 * docs/provisioner/high-availability.md ("The claim, state by state") is rendered from it by
 * spec/lib/provision/claims/claimMachine.table.spec.ts, so the two cannot drift apart.
 */
import { workFailed } from '@rxfleet/operators';
import { formatGoDuration } from '../../choria/duration';
import { ClaimStoreClosedError } from './claimStore';
import { CycleError, nodeDidNotAnswer } from '../cycle/cycleError';
import type { CycleOutcome, CycleResult } from '../cycle/cycleResult';

/** What a claim is doing. */
export type ClaimPhase =
  /** Not started: nothing asked of the bucket yet. */
  | 'idle'
  /** A create is in flight. */
  | 'claiming'
  /** A create the bucket could not take: tried again when `retry` is due. */
  | 'waitingToClaim'
  /** Held: the cycle runs, the claim is written again when `refresh` is due. */
  | 'running'
  /** Held: a run that may have left the node configured failed; the cycle runs again when `rerun` is due. */
  | 'waitingToRerun'
  /** Let go: written one last time (in flight), to be left to age out. */
  | 'writingLast'
  /** Let go: a delete is in flight. */
  | 'releasing'
  /** Let go: a delete the bucket could not take, tried again when `retry` is due. */
  | 'waitingToRelease'
  /** Over: nothing armed, nothing in flight, every event ignored. */
  | 'done';

/** The claim's writes to the bucket. At most one is in flight: a new one abandons the last. */
export type ClaimWrite = 'create' | 'refresh' | 'last' | 'release';

/** The claim's timers, each armed at most once: arming one again replaces it. */
export type ClaimTimer = 'refresh' | 'retry' | 'deadline' | 'rerun';

/** One claim's settings: the stage's, and the node's sighting. */
export interface ClaimRules {
  /** The node. */
  readonly identity: string;
  /** When its sighting was admitted: a sighting older than a claim lives is refused. */
  readonly admittedAt: number;
  readonly ttlMs: number;
  readonly refreshMs: number;
  readonly retryMs: number;
  readonly rerunMs: number;
}

/** What a claim remembers through its phases, lapses included. */
export interface ClaimMemory {
  /** Create and refresh writes the bucket could not take: only the first is logged at error. */
  readonly failures: number;
  /** A create failed without a verdict: it may have been written, and the key, if it holds this owner's value, is adopted. */
  readonly mayHaveCreated: boolean;
  /** When a run first failed leaving the node possibly configured by this instance: from then on the claim is kept. */
  readonly keptSince: number | undefined;
}

/** A held claim. */
export interface ClaimLease {
  /** The revision last written: the next write must find it. */
  readonly revision: number;
  /** When the last acknowledged write was sent: the claim lives a TTL from then, at least. */
  readonly lastSentAt: number;
  /** When the refresh in flight was sent, if one is. */
  readonly refreshSentAt: number | undefined;
}

/** A claim being deleted. */
export interface ClaimRelease {
  readonly revision: number;
  /** When the claim would have aged out anyway: no delete is tried after it. */
  readonly until: number;
  readonly failures: number;
}

/** A claim's state: its phase and what that phase needs. */
export type ClaimState =
  | { readonly phase: 'idle' | 'writingLast' | 'done' }
  | { readonly phase: 'claiming'; readonly memory: ClaimMemory; readonly sentAt: number }
  | { readonly phase: 'waitingToClaim'; readonly memory: ClaimMemory }
  | { readonly phase: 'running' | 'waitingToRerun'; readonly memory: ClaimMemory; readonly lease: ClaimLease }
  | { readonly phase: 'releasing' | 'waitingToRelease'; readonly release: ClaimRelease };

/** What happens to a claim, without the time it happens at. */
export type ClaimInput =
  /** The stage's Observable was subscribed: a worker reached the node's ticket. */
  | { readonly type: 'subscribed' }
  /** It was unsubscribed (or ended): a stop, the pool torn down, or the teardown after the end. */
  | { readonly type: 'unsubscribed' }
  /** The bucket acknowledged the write (a quorum has it). */
  | { readonly type: 'written'; readonly write: ClaimWrite; readonly revision: number }
  /** The write found another revision: someone else holds the key (`ClaimHeldError`). */
  | { readonly type: 'refused'; readonly write: ClaimWrite; readonly error: unknown }
  /** The bucket could not take the write (no leader, no quorum, a timeout, the store closed). */
  | { readonly type: 'failed'; readonly write: ClaimWrite; readonly error: unknown }
  | { readonly type: 'due'; readonly timer: ClaimTimer }
  /** The cycle emitted its outcome. */
  | { readonly type: 'cycleEnded'; readonly outcome: CycleOutcome }
  | { readonly type: 'cycleErrored'; readonly error: unknown }
  /** The cycle completed without an outcome. */
  | { readonly type: 'cycleCompleted' };

/** What happens to a claim, and when (the scheduler's clock). */
export type ClaimEvent = ClaimInput & { readonly at: number };

/** Something to do: a write, a timer, the cycle, the lease the attempt boundary reads, a hook, the output. */
export type ClaimEffect =
  /** Write the claim if the key is free; `adopt`: a key holding this owner's value is this claim's own lost create. */
  | { readonly kind: 'write'; readonly write: 'create'; readonly adopt: boolean }
  | { readonly kind: 'write'; readonly write: 'refresh' | 'last' | 'release'; readonly revision: number }
  | { readonly kind: 'arm'; readonly timer: ClaimTimer; readonly ms: number }
  | { readonly kind: 'disarm'; readonly timer: ClaimTimer }
  | { readonly kind: 'runCycle' }
  | { readonly kind: 'stopCycle' }
  /** Stop the cycle, disarm every timer and abandon the write in flight. */
  | { readonly kind: 'stop' }
  /** The lease is taken (attempts may start), counted as held. */
  | { readonly kind: 'hold'; readonly sentAt: number }
  /** A write was acknowledged: the lease is fresh from `sentAt`, and attempts waiting for it go. */
  | { readonly kind: 'confirm'; readonly sentAt: number }
  /** A write failed: attempts wait for the next acknowledged one. */
  | { readonly kind: 'unconfirm' }
  /** The lease is dropped and no longer counted as held. */
  | { readonly kind: 'letGo' }
  /** The claim was won, written at `revision`. */
  | { readonly kind: 'won'; readonly revision: number }
  | { readonly kind: 'lost' }
  | { readonly kind: 'lapsed'; readonly why: string }
  | { readonly kind: 'kept'; readonly error: unknown }
  | { readonly kind: 'failed'; readonly operation: 'create' | 'refresh' | 'release'; readonly error: unknown; readonly first: boolean }
  /** Emit `outcome` (if any), then complete. */
  | { readonly kind: 'finish'; readonly outcome?: CycleOutcome }
  | { readonly kind: 'fail'; readonly error: unknown };

/** The claim's next state and what to do, in order. */
export interface ClaimStep {
  readonly state: ClaimState;
  readonly effects: readonly ClaimEffect[];
}

/** A claim before its stage is subscribed. */
export const IDLE_CLAIM: ClaimState = { phase: 'idle' };

/** Outcomes after which the node leaves provisioning mode: its claim is kept until it ages out. */
const LEAVING: ReadonlySet<CycleResult> = new Set<CycleResult>(['provisioned', 'shutdown']);

/** The write a claim waits for the answer to: an answer to any other is one it abandoned. */
function awaited(state: ClaimState): ClaimWrite | undefined {
  switch (state.phase) {
    case 'claiming':
      return 'create';
    case 'running':
    case 'waitingToRerun':
      return state.lease.refreshSentAt === undefined ? undefined : 'refresh';
    case 'writingLast':
      return 'last';
    case 'releasing':
      return 'release';
    default:
      return undefined;
  }
}

const DONE: ClaimState = { phase: 'done' };
const FIRST_MEMORY: ClaimMemory = { failures: 0, mayHaveCreated: false, keptSince: undefined };
const STOP: ClaimEffect = { kind: 'stop' };
const LET_GO: ClaimEffect = { kind: 'letGo' };
const TAKEN = 'another provisioner wrote it';

const go = (state: ClaimState, ...effects: ClaimEffect[]): ClaimStep => ({ state, effects });
const arm = (timer: ClaimTimer, ms: number): ClaimEffect => ({ kind: 'arm', timer, ms: Math.max(0, ms) });
const failure = (operation: 'create' | 'refresh', error: unknown, memory: ClaimMemory): ClaimEffect => ({
  kind: 'failed',
  operation,
  error,
  first: memory.failures === 0,
});
const failedOnce = (memory: ClaimMemory): ClaimMemory => ({ ...memory, failures: memory.failures + 1 });

/**
 * A claim's transition: its next state and the effects to carry out, in order, when `event`
 * happens in `state`. Pure: the same arguments always give the same step, and nothing is read or
 * changed. An event a phase does not expect (an answer to a write it abandoned, a cycle's
 * completion after its outcome, anything once done) leaves the state as it is and does nothing.
 */
export function stepClaim(rules: ClaimRules, state: ClaimState, event: ClaimEvent): ClaimStep {
  if ('write' in event && awaited(state) !== event.write) return go(state);
  switch (state.phase) {
    case 'idle':
      return event.type === 'subscribed' ? claimUnlessStale(rules, FIRST_MEMORY, event.at) : go(state);
    case 'claiming':
      return claiming(rules, state, event);
    case 'waitingToClaim':
      if (event.type === 'due' && event.timer === 'retry') return claimUnlessStale(rules, state.memory, event.at);
      return event.type === 'unsubscribed' ? go(DONE, STOP) : go(state);
    case 'running':
    case 'waitingToRerun':
      return holding(rules, state, event);
    case 'writingLast':
      if (event.type === 'written') return go(DONE);
      if (event.type === 'refused' || event.type === 'failed')
        return go(DONE, { kind: 'failed', operation: 'release', error: event.error, first: true });
      return go(state);
    case 'releasing':
    case 'waitingToRelease':
      return releasing(rules, state, event);
    case 'done':
      return go(state);
  }
}

/** Claims the node, unless its sighting is older than a claim lives: another instance may have finished it since. */
function claimUnlessStale(rules: ClaimRules, memory: ClaimMemory, at: number, before: readonly ClaimEffect[] = []): ClaimStep {
  const age = at - rules.admittedAt;
  if (age > rules.ttlMs) return go(DONE, ...before, { kind: 'finish', outcome: staleOutcome(rules, age) });
  return go({ phase: 'claiming', memory, sentAt: at }, ...before, { kind: 'write', write: 'create', adopt: memory.mayHaveCreated });
}

function claiming(rules: ClaimRules, state: Extract<ClaimState, { phase: 'claiming' }>, event: ClaimEvent): ClaimStep {
  const { memory, sentAt } = state;
  switch (event.type) {
    case 'written':
      return go(
        { phase: 'running', memory, lease: { revision: event.revision, lastSentAt: sentAt, refreshSentAt: undefined } },
        { kind: 'hold', sentAt },
        { kind: 'won', revision: event.revision },
        arm('deadline', sentAt + rules.ttlMs - event.at),
        arm('refresh', rules.refreshMs),
        { kind: 'runCycle' },
      );
    case 'refused':
      return go(DONE, { kind: 'lost' }, { kind: 'finish', outcome: { status: 'done', value: 'claimed' } });
    case 'failed':
      // The bucket cannot take the write now (no leader, no quorum): wait for it, claiming nothing.
      // The write may have been made all the same, its acknowledgement lost.
      return go(
        { phase: 'waitingToClaim', memory: { ...failedOnce(memory), mayHaveCreated: true } },
        failure('create', event.error, memory),
        arm('retry', rules.retryMs),
      );
    case 'unsubscribed':
      return go(DONE, STOP);
    default:
      return go(state);
  }
}

type Held = Extract<ClaimState, { phase: 'running' | 'waitingToRerun' }>;

function holding(rules: ClaimRules, state: Held, event: ClaimEvent): ClaimStep {
  const { memory, lease } = state;
  switch (event.type) {
    case 'due':
      if (event.timer === 'deadline') return lapse(rules, memory, event.at);
      if (event.timer === 'rerun')
        return state.phase === 'waitingToRerun' ? go({ ...state, phase: 'running' }, { kind: 'runCycle' }) : go(state);
      return refresh(rules, state, event.timer === 'refresh', event.at);
    case 'written': {
      // `awaited` lets through only the answer to a refresh in flight.
      const sentAt = lease.refreshSentAt!;
      return go(
        { ...state, lease: { revision: event.revision, lastSentAt: sentAt, refreshSentAt: undefined } },
        { kind: 'confirm', sentAt },
        { kind: 'disarm', timer: 'retry' },
        arm('deadline', sentAt + rules.ttlMs - event.at),
      );
    }
    case 'refused':
      return go(DONE, LET_GO, STOP, { kind: 'lapsed', why: TAKEN }, { kind: 'finish', outcome: lapsedOutcome(rules, TAKEN) });
    case 'failed':
      return go(
        { ...state, memory: failedOnce(memory), lease: { ...lease, refreshSentAt: undefined } },
        { kind: 'unconfirm' },
        failure('refresh', event.error, memory),
        arm('retry', rules.retryMs),
      );
    case 'cycleEnded':
    case 'cycleErrored':
    case 'cycleCompleted':
      return state.phase === 'running' ? cycleEnded(rules, state, event) : go(state);
    case 'unsubscribed':
      // A hard stop, or the pool torn down: the node is freed at once, unless it may hold this instance's configuration.
      return letGo(rules, state, event.at, false);
    default:
      return go(state);
  }
}

/** The claim written again from the revision last written: on schedule (`refresh`, which re-arms itself) or after a failure (`retry`). */
function refresh(rules: ClaimRules, state: Held, onSchedule: boolean, at: number): ClaimStep {
  const again: ClaimEffect[] = onSchedule ? [arm('refresh', rules.refreshMs)] : [];
  if (state.lease.refreshSentAt !== undefined) return go(state, ...again);
  return go({ ...state, lease: { ...state.lease, refreshSentAt: at } }, ...again, {
    kind: 'write',
    write: 'refresh',
    revision: state.lease.revision,
  });
}

/**
 * No write acknowledged within a lifetime of the last one sent: the claim has aged out and the
 * cycle is stopped. The node is no failed node: it is claimed again (waiting for the bucket) and its
 * cycle run afresh, unless the sighting is stale by now.
 */
function lapse(rules: ClaimRules, memory: ClaimMemory, at: number): ClaimStep {
  const why = `not written again within its ${formatGoDuration(rules.ttlMs)} lifetime`;
  return claimUnlessStale(rules, memory, at, [LET_GO, STOP, { kind: 'lapsed', why }]);
}

type CycleEnd = Extract<ClaimEvent, { type: 'cycleEnded' | 'cycleErrored' | 'cycleCompleted' }>;

function cycleEnded(rules: ClaimRules, state: Held, event: CycleEnd): ClaimStep {
  const { at } = event;
  if (event.type === 'cycleCompleted') return letGo(rules, state, at, false, { kind: 'finish' });
  const failed = event.type === 'cycleErrored' ? { error: event.error } : event.outcome.status === 'failed' ? event.outcome : undefined;
  if (failed !== undefined && keepsClaim(rules, state.memory, failed.error, at)) {
    return go(
      { ...state, phase: 'waitingToRerun', memory: { ...state.memory, keptSince: state.memory.keptSince ?? at } },
      { kind: 'stopCycle' },
      { kind: 'kept', error: failed.error },
      arm('rerun', rules.rerunMs),
    );
  }
  if (event.type === 'cycleErrored') return letGo(rules, state, at, false, { kind: 'fail', error: event.error });
  const leaving = event.outcome.status === 'done' && LEAVING.has(event.outcome.value);
  return letGo(rules, state, at, leaving, { kind: 'finish', outcome: event.outcome });
}

/**
 * Whether a run's failure keeps the claim, since another instance would configure the node a
 * second time: the first failure that says the node may be configured, and from then on each
 * failure with the node not answering, for one claim lifetime from the first.
 */
function keepsClaim(rules: ClaimRules, memory: ClaimMemory, error: unknown, at: number): boolean {
  const mayBeConfigured = error instanceof CycleError && error.nodeMayBeConfigured;
  if (memory.keptSince === undefined) return mayBeConfigured;
  if (!mayBeConfigured && !nodeDidNotAnswer(error)) return false;
  return at - memory.keptSince < rules.ttlMs;
}

/**
 * The claim let go when its cycle ends (or its stage is unsubscribed): written one last time and
 * left to age out when the node leaves provisioning mode or may hold this instance's
 * configuration, so no other instance takes it meanwhile; otherwise deleted at once, so another
 * instance (or the next sighting) may take the node.
 */
function letGo(rules: ClaimRules, state: Held, at: number, leaving: boolean, ...ending: ClaimEffect[]): ClaimStep {
  const { revision } = state.lease;
  if (leaving || state.memory.keptSince !== undefined)
    return go({ phase: 'writingLast' }, LET_GO, STOP, { kind: 'write', write: 'last', revision }, ...ending);
  const release: ClaimRelease = { revision, until: at + rules.ttlMs, failures: 0 };
  return go({ phase: 'releasing', release }, LET_GO, STOP, { kind: 'write', write: 'release', revision }, ...ending);
}

/**
 * A delete the bucket cannot take (no leader, no quorum) is tried again every `retryMs` until the
 * claim would have aged out anyway or the store is closed (a daemon stopping): a node given back
 * is free as soon as the bucket answers again, not a lifetime later.
 */
function releasing(
  rules: ClaimRules,
  state: Extract<ClaimState, { phase: 'releasing' | 'waitingToRelease' }>,
  event: ClaimEvent,
): ClaimStep {
  const { release } = state;
  if (state.phase === 'waitingToRelease') {
    if (event.type !== 'due' || event.timer !== 'retry') return go(state);
    return go({ phase: 'releasing', release }, { kind: 'write', write: 'release', revision: release.revision });
  }
  if (event.type === 'written') return go(DONE);
  if (event.type !== 'refused' && event.type !== 'failed') return go(state);
  const report: ClaimEffect = { kind: 'failed', operation: 'release', error: event.error, first: release.failures === 0 };
  if (event.error instanceof ClaimStoreClosedError || event.at + rules.retryMs >= release.until) return go(DONE, report);
  return go({ phase: 'waitingToRelease', release: { ...release, failures: release.failures + 1 } }, report, arm('retry', rules.retryMs));
}

function staleOutcome(rules: ClaimRules, age: number): CycleOutcome {
  const why = `skipping node that's been waiting ${formatGoDuration(age)}: longer than a claim lives (${formatGoDuration(rules.ttlMs)}), so another provisioner may have finished it`;
  return workFailed(new CycleError(rules.identity, 'stale', why));
}

function lapsedOutcome(rules: ClaimRules, why: string): CycleOutcome {
  return workFailed(new CycleError(rules.identity, 'claim', `the claim on ${rules.identity} lapsed (${why}): its cycle was stopped`));
}
