// What the kit's declarations promise a TypeScript user; only type-checked (in every mode the spec
// compiles under), never run.
import { Observable, OperatorFunction, Subject, map, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import {
  AdmissionLedger,
  OrderedLine,
  PerKeyReader,
  RetryLadderSchedule,
  RingQueue,
  TRASH,
  Ticket,
  admit,
  debounceByKey,
  done,
  pacedSweep,
  releaseInOrder,
  valueTicket,
  workDone,
  workerPool,
} from '@rxfleet/operators';
import type { Done, Place, ReadsPerKey, Refusal, RetrySchedule, Settling, SweepEvent, Trash } from '@rxfleet/operators';

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

// debounceByKey says what a superseded value goes out as: a mark of its own type is in the output.
interface Change {
  subject: string;
}
declare const changes$: Observable<Change>;
export const debounced$: Observable<Change | (Change & { dropped: 'debounce' })> = changes$.pipe(
  debounceByKey({ key: (c) => c.subject, superseded: (c) => ({ ...c, dropped: 'debounce' as const }) }),
);
// Without `superseded`, what comes in goes out.
export const unmarked$: Observable<Change> = changes$.pipe(debounceByKey({ key: (c) => c.subject }));

// workerPool on plain values, through valueTicket: the value comes back in the result.
export const plain$: Observable<string> = of('a', 'b').pipe(
  map(valueTicket),
  workerPool({ concurrency: 2, work: (t) => of(workDone(t.value.length)) }),
  map(({ ticket: t, outcome }) => `${t.value}:${outcome.status}`),
);

// The old names compile for one release, as the very types of the new ones.
export const oldReads: ReadsPerKey<string, string, number> = new PerKeyReader<string, string, number>({
  key: (r) => r,
  read: () => of(1),
  onLanded: () => undefined,
});
export const oldRetries: RetrySchedule<string> = new RetryLadderSchedule<string>({ onDue: () => undefined });
export const oldDone: Done<number> = done(1);
