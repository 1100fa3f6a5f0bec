// A TypeScript user of the packed kit. The spec compiles this one source under nodenext as ES
// module (copied to pipeline.mts) and as CommonJS, under node10 and under bundler (then bundled
// with esbuild), and runs each; every run prints the same line.
import { Observable, OperatorFunction, lastValueFrom, map, of, timer, toArray } from 'rxjs';
import { AdmissionLedger, NoOutcomeError, admit, workDone, workFailed, releaseInOrder, workerPool } from '@rxfleet/operators';
import type { PoolResult, Ticket } from '@rxfleet/operators';
import { TestTicket } from '@rxfleet/operators/testing';

interface Sighting {
  id: string;
}

// One type argument is enough for a ledger, and a ledger typed with its key is assignable to it.
const ledger: AdmissionLedger<Sighting> = new AdmissionLedger({ key: (s: Sighting) => s.id, window: 60_000, capacity: 10 });
const pool = workerPool({ concurrency: 1, work: (t: Ticket<Sighting>) => of(workDone(t.value.id.toUpperCase())) });
const pooled$: Observable<PoolResult<Ticket<Sighting>, string>> = pool(of({ id: 'a' }, { id: 'b' }, { id: 'a' }).pipe(admit(ledger)));
// Without `drain`, the answers only: not `number | string`.
const ordered: OperatorFunction<number, number> = releaseInOrder((n: number) => timer(n * 5).pipe(map(() => n * 10)));
const inOrder$ = of(3, 1, 2).pipe(ordered);
const ticket = new TestTicket('t');
const tested$ = of(ticket).pipe(workerPool({ concurrency: 1, work: () => of(workFailed(new Error('no'))) }));
const routed = new Promise<string>((resolve) => {
  const onBusy = (): void => {
    throw new Error('boom');
  };
  of(new TestTicket('x'))
    .pipe(workerPool({ concurrency: 1, work: () => of(workDone(1)), onBusy }))
    .subscribe({ error: (e: Error) => resolve(e.message) });
});
const valueOf = (r: PoolResult<Ticket<Sighting>, string>): string | undefined =>
  r.outcome.status === 'done' ? r.outcome.value : undefined;

void Promise.all([
  lastValueFrom(pooled$.pipe(map(valueOf), toArray())),
  lastValueFrom(inOrder$.pipe(toArray())),
  lastValueFrom(tested$),
  routed,
]).then(([pooled, inOrder, , thrown]) =>
  console.log(
    JSON.stringify({
      pooled,
      inOrder,
      held: ledger.held,
      frees: ticket.frees,
      sameRxjs: pooled$ instanceof Observable,
      routed: thrown,
      noOutcome: new NoOutcomeError().name,
    }),
  ),
);
