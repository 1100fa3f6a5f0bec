// An ES module user of the packed kit, in plain Node: the same pipeline as pipeline.ts, and the
// kit required from the same process (a CommonJS dependency would) is the very same kit.
import { createRequire } from 'node:module';
import { Observable, lastValueFrom, map, of, timer, toArray } from 'rxjs';
import { AdmissionLedger, NoOutcomeError, PausedError, admit, workDone, workFailed, releaseInOrder, workerPool } from '@rxfleet/operators';
import { TestTicket } from '@rxfleet/operators/testing';

const required = createRequire(import.meta.url)('@rxfleet/operators');
const ledger = new AdmissionLedger({ key: (s) => s.id, window: 60_000, capacity: 10 });
const pool = workerPool({ concurrency: 1, work: (t) => of(workDone(t.value.id.toUpperCase())) });
const pooled$ = pool(of({ id: 'a' }, { id: 'b' }, { id: 'a' }).pipe(admit(ledger)));
const inOrder$ = of(3, 1, 2).pipe(releaseInOrder((n) => timer(n * 5).pipe(map(() => n * 10))));
const ticket = new TestTicket('t');
const tested$ = of(ticket).pipe(workerPool({ concurrency: 1, work: () => of(workFailed(new Error('no'))) }));
const routed = new Promise((resolve) => {
  const onBusy = () => {
    throw new Error('boom');
  };
  of(new TestTicket('x'))
    .pipe(workerPool({ concurrency: 1, work: () => of(workDone(1)), onBusy }))
    .subscribe({ error: (e) => resolve(e.message) });
});

Promise.all([
  lastValueFrom(
    pooled$.pipe(
      map((r) => r.outcome.value),
      toArray(),
    ),
  ),
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
      sameRxjs: pooled$ instanceof Observable && required.releaseInOrder((n) => of(n))(of(1)) instanceof Observable,
      routed: thrown,
      noOutcome: new NoOutcomeError().name,
      sameKit: required.PausedError === PausedError && new required.PausedError() instanceof PausedError,
    }),
  ),
);
