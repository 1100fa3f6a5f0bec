import { Observable, ObservableInput, OperatorFunction, from } from 'rxjs';
import { AdmissionLedger, Refusal, Ticket } from './AdmissionLedger';

/** Options for {@link admit}. */
export interface AdmitConfig<V, K> {
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
 * is released, superseded or reset.
 *
 * ```
 * key = letter, window = 5 ms, capacity = 10
 * source: a b a----a-|
 * admit:  x y ------z-|      x = ticket(a), y = ticket(b), z = ticket(a) superseding x
 * ```
 * (the second `a` is refused as `held`; the `a` 5 ms after the first supersedes it)
 *
 * Semantics:
 * - The ledger outlives the subscription: its tickets and sizes are shared with the worker pool
 *   and with whoever resets it.
 * - `reset` is subscribed before the source, so a reset that fires at once applies to the first
 *   value. Its completion is ignored; its error errors the output.
 * - Completes when the source completes; errors when the source errors.
 * - Unsubscribing unsubscribes the source and `reset`; admitted tickets stay in the ledger until
 *   released (the worker pool releases what it holds when it is torn down).
 *
 * @param ledger the ledger that decides.
 * @param config `reset` notifier and `onRefuse` report.
 */
export function admit<V, K>(ledger: AdmissionLedger<V, K>, config: AdmitConfig<V, K> = {}): OperatorFunction<V, Ticket<V, K>> {
  const { reset, onRefuse } = config;
  return (source) =>
    new Observable<Ticket<V, K>>((subscriber) => {
      if (reset !== undefined) {
        subscriber.add(
          from(reset).subscribe({
            next: () => ledger.reset(),
            error: (error: unknown) => subscriber.error(error),
          }),
        );
        if (subscriber.closed) return;
      }
      subscriber.add(
        source.subscribe({
          next: (value) => {
            const ticket = ledger.decide(value, onRefuse);
            if (ticket !== undefined) subscriber.next(ticket);
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => subscriber.complete(),
        }),
      );
    });
}
