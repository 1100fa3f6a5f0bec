import { Observable, ObservableInput, SchedulerAction, SchedulerLike, Subscription, catchError, from, throwError } from 'rxjs';
import type { CycleOutcome } from '../cycle/cycleResult';
import { ClaimEffect, ClaimEvent, ClaimInput, ClaimRules, ClaimState, ClaimTimer, IDLE_CLAIM, stepClaim } from './claimMachine';
import { ClaimLeases } from './claimLeases';
import { ClaimHooks } from './claimOptions';
import { ClaimHeldError, ClaimStore, once } from './claimStore';

/** What {@link driveClaim} works with: one node's claim rules and the parts its effects act on. */
export interface ClaimDriving {
  readonly rules: ClaimRules;
  /** The node's key in the bucket. */
  readonly key: string;
  /** The claim's value: this instance. */
  readonly owner: string;
  readonly store: ClaimStore;
  readonly scheduler: SchedulerLike;
  readonly hooks: ClaimHooks;
  readonly leases: ClaimLeases;
  /** The node's cycle, subscribed once per run. */
  readonly cycle: () => Observable<CycleOutcome>;
}

type WriteEffect = Extract<ClaimEffect, { kind: 'write' }>;

/**
 * One node's claim, run: {@link stepClaim} decides, this carries the effects out (bucket writes
 * through the store, timers through the scheduler, the cycle's runs, the lease, the hooks, the
 * output) and feeds what comes back in as events, stamped with the scheduler's clock.
 *
 * Guarantees:
 * - Events are stepped one at a time, in the order they happen: one that comes while another's
 *   effects are being carried out (a write the store answers synchronously, the teardown that
 *   completing the output runs) waits for them to finish.
 * - The claim outlives its output: a last write or a delete (and the delete's retries) still runs
 *   after the outcome is emitted or the output unsubscribed, until the machine is `done`.
 * - A throw while stepping (a hook that throws) errors the output once: the claim then stops where
 *   it is, its lease let go, and is left in the bucket to age out.
 */
export function driveClaim(claim: ClaimDriving): Observable<CycleOutcome> {
  return new Observable<CycleOutcome>((subscriber) => {
    let state: ClaimState = IDLE_CLAIM;
    const inbox: ClaimEvent[] = [];
    let stepping = false;
    const work = new ClaimWork(claim, (input) => dispatch(input));
    const perform = (effect: ClaimEffect): void => {
      if (effect.kind === 'fail') return subscriber.error(effect.error);
      if (effect.kind !== 'finish') return work.perform(effect);
      if (effect.outcome !== undefined) subscriber.next(effect.outcome);
      subscriber.complete();
    };
    const dispatch = (input: ClaimInput): void => {
      inbox.push({ ...input, at: claim.scheduler.now() });
      if (stepping) return;
      stepping = true;
      try {
        for (let event = inbox.shift(); event !== undefined; event = inbox.shift()) {
          const step = stepClaim(claim.rules, state, event);
          state = step.state;
          for (const effect of step.effects) perform(effect);
        }
      } catch (error) {
        state = { phase: 'done' };
        inbox.length = 0;
        work.abandon();
        subscriber.error(error);
      } finally {
        stepping = false;
      }
    };
    dispatch({ type: 'subscribed' });
    return () => dispatch({ type: 'unsubscribed' });
  });
}

type WorkEffect = Exclude<ClaimEffect, { kind: 'finish' | 'fail' }>;

/**
 * What a claim does besides its output: its writes (one in flight), its timers (one of each), its
 * cycle's runs, its lease and its hooks.
 */
class ClaimWork {
  private run: Subscription | undefined;
  private write: Subscription | undefined;
  private readonly timers = new Map<ClaimTimer, Subscription>();
  // Whether the lease is taken, for the one exit the machine does not decide (a throw).
  private holding = false;

  constructor(
    private readonly claim: ClaimDriving,
    private readonly dispatch: (input: ClaimInput) => void,
  ) {}

  perform(effect: WorkEffect): void {
    const { leases, hooks, rules } = this.claim;
    const { identity } = rules;
    switch (effect.kind) {
      case 'write':
        return this.startWrite(effect);
      case 'arm':
        return this.arm(effect.timer, effect.ms);
      case 'disarm':
        return this.disarm(effect.timer);
      case 'runCycle':
        this.run = this.claim.cycle().subscribe({
          next: (outcome) => this.dispatch({ type: 'cycleEnded', outcome }),
          error: (error: unknown) => this.dispatch({ type: 'cycleErrored', error }),
          complete: () => this.dispatch({ type: 'cycleCompleted' }),
        });
        return;
      case 'stopCycle':
        return this.run?.unsubscribe();
      case 'stop':
        this.run?.unsubscribe();
        this.write?.unsubscribe();
        for (const timer of [...this.timers.keys()]) this.disarm(timer);
        return;
      case 'hold':
        this.holding = true;
        return leases.hold(identity, effect.sentAt);
      case 'confirm':
        return leases.confirm(identity, effect.sentAt);
      case 'unconfirm':
        return leases.unconfirm(identity);
      case 'letGo':
        this.holding = false;
        return leases.letGo(identity);
      case 'won':
        return hooks.won?.(identity, effect.revision);
      case 'lost':
        return hooks.lost?.(identity);
      case 'lapsed':
        return hooks.lapsed?.(identity, effect.why);
      case 'kept':
        return hooks.kept?.(identity, effect.error);
      case 'failed':
        return hooks.failed?.(effect.operation, identity, effect.error, effect.first);
    }
  }

  /** Everything stopped where it is and the lease let go: what a throw leaves behind. */
  abandon(): void {
    this.perform({ kind: 'stop' });
    if (this.holding) this.perform({ kind: 'letGo' });
  }

  private arm(timer: ClaimTimer, ms: number): void {
    this.disarm(timer);
    const dispatch = this.dispatch;
    const timers = this.timers;
    timers.set(
      timer,
      this.claim.scheduler.schedule(function (this: SchedulerAction<unknown>) {
        // Closed, so that a tracking scheduler sees it gone once it has fired.
        this.unsubscribe();
        timers.delete(timer);
        dispatch({ type: 'due', timer });
      }, ms),
    );
  }

  private disarm(timer: ClaimTimer): void {
    this.timers.get(timer)?.unsubscribe();
    this.timers.delete(timer);
  }

  private startWrite(effect: WriteEffect): void {
    this.write?.unsubscribe();
    const { write } = effect;
    this.write = once(() => this.operation(effect)).subscribe({
      next: (answer) => this.dispatch({ type: 'written', write, revision: typeof answer === 'number' ? answer : 0 }),
      error: (error: unknown) =>
        this.dispatch(error instanceof ClaimHeldError ? { type: 'refused', write, error } : { type: 'failed', write, error }),
    });
  }

  private operation(effect: WriteEffect): ObservableInput<unknown> {
    const { store, key, owner } = this.claim;
    if (effect.write === 'release') return store.release(key, effect.revision);
    if (effect.write !== 'create') return store.update(key, owner, effect.revision);
    const adopt = store.adopt?.bind(store);
    if (!effect.adopt || adopt === undefined) return store.create(key, owner);
    return from(store.create(key, owner)).pipe(
      catchError((error: unknown) => (error instanceof ClaimHeldError ? adopt(key, owner) : throwError(() => error))),
    );
  }
}
