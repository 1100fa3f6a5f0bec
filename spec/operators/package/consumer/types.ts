// What the kit's declarations promise a TypeScript user; only type-checked, never run.
import { Observable, OperatorFunction, of } from 'rxjs';
import { AdmissionLedger, OrderedLine, RingQueue, TRASH, Ticket, admit, releaseInOrder } from '@rxfleet/operators';
import type { Place, Refusal } from '@rxfleet/operators';

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

export const place: Place<string> = new OrderedLine<string>().push('a');
export const ring = new RingQueue<number>();
// @ts-expect-error only a ledger issues tickets
export const forged = new Ticket(keyed, { id: 'a' }, 'a', 0);
