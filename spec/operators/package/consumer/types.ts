// What the kit's declarations promise a TypeScript user; only type-checked (in every mode the spec
// compiles under), never run.
import { Observable, OperatorFunction, Subject, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { AdmissionLedger, OrderedLine, RingQueue, TRASH, Ticket, admit, pacedSweep, releaseInOrder } from '@rxfleet/operators';
import type { Place, Refusal, Settling, SweepEvent, Trash } from '@rxfleet/operators';

interface Node {
  id: string;
}

const keyed = new AdmissionLedger({ key: (n: Node) => n.id, window: 1, capacity: 1 });
export const one: AdmissionLedger<Node> = keyed;
export const ticket$: Observable<Ticket<Node, string>> = of<Node>({ id: 'a' }).pipe(admit(keyed));
export const loose$: Observable<Ticket<Node>> = of<Node>({ id: 'a' }).pipe(admit(one));
export const refused = (r: Refusal<Node>): string => r.reason;

export const answers: OperatorFunction<number, string> = releaseInOrder((n: number) => of(n > 0 ? String(n) : TRASH));
export const drained: OperatorFunction<number, string | number> = releaseInOrder((n: number) => of(String(n)), { drain: of(0) });
// @ts-expect-error with `drain`, unanswered values of the source's type may come out too
export const notOnlyAnswers: OperatorFunction<number, string> = releaseInOrder((n: number) => of(String(n)), { drain: of(0) });

// Values that settle themselves: the output is their answer type, inferred from the values.
interface Job extends Settling<{ done: string }> {
  readonly id: number;
}
declare const jobs: Observable<Job>;
export const settled$: Observable<{ done: string }> = jobs.pipe(releaseInOrder());
// @ts-expect-error not `unknown`: the answer type is known, and it is not a number
export const notUnknown$: Observable<number> = jobs.pipe(releaseInOrder());
export const settledOrDrained$: Observable<{ done: string } | Job> = jobs.pipe(releaseInOrder({ drain: of(true) }));

// TRASH keeps its own type in an object literal (a `unique symbol` would widen to `symbol`).
new TestScheduler(() => undefined).run(({ cold }) => {
  const trashed: Observable<Trash> = cold('-T|', { T: TRASH });
  const values = { T: TRASH };
  const kept: Trash = values.T;
  return [trashed, kept];
});
// @ts-expect-error a symbol is not TRASH
export const notTrash: Trash = Symbol('TRASH');

// A listing that is a promise of an array is a listing of its items.
declare function listInstanceNames(): Promise<string[]>;
export const sweep$: Observable<SweepEvent<string>> = pacedSweep({ list: () => listInstanceNames(), delay: 1, interval: 1 });
export const item = (e: SweepEvent<string>): string | undefined => (e.kind === 'item' ? e.item.toUpperCase() : undefined);

export const place: Place<string> = new OrderedLine<string>().push('a');
export const ring = new RingQueue<number>();
export const feedback = new Subject<number>();
// @ts-expect-error only a ledger issues tickets
export const forged = new Ticket(keyed, { id: 'a' }, 'a', 0);
