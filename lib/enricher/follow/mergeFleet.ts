import { OperatorFunction, defer, filter, map } from 'rxjs';
import { FleetInput, FleetLedger, FleetUpdate } from './fleetLedger';

/**
 * The read-then-follow merge as an operator: the state bucket's snapshot, then the stream's
 * events, in, and the fleet, then each change to it, out.
 *
 * ```
 * input:   S-----e1---e1---e2---e4---|      S: snapshot (c1 at seq 1), eN: c1's event at seq N
 * output:  s-----------------c----c--|      s: the fleet; e1 was in the snapshot, its repeat too;
 *                                           e4 says missed: 1 (seq 3 never came)
 * ```
 *
 * Each subscription has its own view ({@link FleetLedger}): what the snapshot holds and every
 * event seen since are applied once, so a repeat (the duplicate window past a server restart, the
 * overlap between the bucket and the stream) says nothing, and a gap is counted on the event
 * after it. Completes and errors with its source; unsubscribing drops the view. Events before a
 * snapshot are applied to an empty fleet.
 */
export function mergeFleet(): OperatorFunction<FleetInput, FleetUpdate> {
  return (source) =>
    defer(() => {
      const ledger = new FleetLedger();
      return source.pipe(
        map((input) => ledger.apply(input)),
        filter((update): update is FleetUpdate => update !== undefined),
      );
    });
}
