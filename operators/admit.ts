import { Observable, ObservableInput, OperatorFunction } from 'rxjs';
import { AdmissionLedger, Refusal, Ticket } from './AdmissionLedger.js';
import { checkFunction, checkOptionalFunction } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';

/**
 * Options for {@link admit}.
 *
 * @group Options
 */
export interface AdmitConfig<V, K = unknown> {
  /** Each emission clears the ledger (for example a lost election): every outstanding ticket goes stale. */
  reset?: ObservableInput<unknown>;
  /** Told about every refused value, with the reason (`held` or `full`). */
  onRefuse?: (refusal: Refusal<V, K>) => void;
}

/**
 * Admits each value through an {@link AdmissionLedger} and emits a {@link Ticket} for every value
 * admitted; refused values are reported to `onRefuse` and go no further.
 *
 * Sightings of the same thing arrive from several sources (a discovery round, a lifecycle event,
 * a retry); admission is where they meet, so whatever follows sees each key once until its ticket
 * is freed, superseded or reset.
 *
 * ```
 * key = the letter, window = 5 ms, capacity = 10
 * source: aba----a-|
 * result: xy-----z-|      x = ticket(a), y = ticket(b), z = ticket(a), superseding x
 * ```
 * (the second `a`, at 2, is refused as `held`; the one at 7 comes a window after x, which no
 * worker has started, and supersedes it)
 *
 * Semantics:
 * - The ledger outlives the subscription: its tickets and sizes are shared with the worker pool
 *   and with whoever resets it.
 * - `reset` is subscribed before the source, so a reset that fires at once applies to the first
 *   value. Its completion is ignored; its error errors the output.
 * - Completes when the source completes; errors when the source errors.
 * - The ledger's `key` or `onRefuse` throwing errors the output (as rxjs's operators do when a
 *   callback throws); the ledger is left as the decision had got, consistent either way.
 * - Unsubscribing unsubscribes the source and `reset`; admitted tickets stay in the ledger until
 *   freed (the worker pool frees what it holds when it is torn down).
 * - Bad options are refused when the operator is made: a `ledger` that is not an
 *   {@link AdmissionLedger}, or an `onRefuse` that is not a function, is a `TypeError` (the
 *   ledger's own options are checked when it is made).
 *
 * @example Admit discovery and startup sightings once per node; a lost election forgets them all
 * ```ts
 * const ledger = new AdmissionLedger({ key: (s: Sighting) => s.id, window: 60_000, capacity: 50_000 });
 * merge(discovered$, startupEvents$)
 *   .pipe(
 *     admit(ledger, { reset: leadershipLost$, onRefuse: (r) => log.info(`${r.key} refused: ${r.reason}`) }),
 *     workerPool({ concurrency: 16, work: (ticket) => fromAbortable((signal) => provision(ticket.value, signal).then(workDone)) }),
 *   )
 *   .subscribe();
 * ```
 *
 * @param ledger the ledger that decides.
 * @param config `reset` notifier and `onRefuse` report.
 * @return A function that returns an Observable of the admitted {@link Ticket}s.
 * @throws TypeError (when called) if `ledger` is not a ledger or `onRefuse` not a function.
 *
 * @group Operators
 */
export function admit<V, K>(ledger: AdmissionLedger<V, K>, config: AdmitConfig<V, K> = {}): OperatorFunction<V, Ticket<V, K>> {
  const { reset, onRefuse } = config;
  checkFunction('admit', 'ledger.decide', (ledger as Partial<AdmissionLedger<V, K>> | undefined)?.decide);
  checkOptionalFunction('admit', 'onRefuse', onRefuse);
  return (source) =>
    new Observable<Ticket<V, K>>((subscriber) => {
      if (reset !== undefined) {
        subscribeWith(subscriber, reset, {
          next: () => ledger.reset(),
          // A reset notifier that completes leaves the ledger as it is.
          complete: () => undefined,
        });
        if (subscriber.closed) return;
      }
      subscribeWith(subscriber, source, {
        next: (value) => {
          const ticket = ledger.decide(value, onRefuse);
          if (ticket !== undefined) subscriber.next(ticket);
        },
      });
    });
}
