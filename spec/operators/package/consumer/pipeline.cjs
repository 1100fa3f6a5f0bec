// A CommonJS user of the packed kit: the same small pipeline as pipeline.mjs and pipeline.ts (written
// with the old names `done` and `failed`, kept for one release, which must still run), and the
// kit imported from the same process (an ES module dependency would) is the very same kit.
const { Observable, lastValueFrom, map, of, timer, toArray } = require('rxjs');
const kit = require('@rxfleet/operators');
const { TestTicket } = require('@rxfleet/operators/testing');

const ledger = new kit.AdmissionLedger({ key: (s) => s.id, window: 60_000, capacity: 10 });
const pool = kit.workerPool({ concurrency: 1, work: (t) => of(kit.done(t.value.id.toUpperCase())) });
const pooled$ = pool(of({ id: 'a' }, { id: 'b' }, { id: 'a' }).pipe(kit.admit(ledger)));
const inOrder$ = of(3, 1, 2).pipe(kit.releaseInOrder((n) => timer(n * 5).pipe(map(() => n * 10))));
const ticket = new TestTicket('t');
const tested$ = of(ticket).pipe(kit.workerPool({ concurrency: 1, work: () => of(kit.failed(new Error('no'))) }));
const routed = new Promise((resolve) => {
  const onBusy = () => {
    throw new Error('boom');
  };
  of(new TestTicket('x'))
    .pipe(kit.workerPool({ concurrency: 1, work: () => of(kit.done(1)), onBusy }))
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
  import('@rxfleet/operators'),
]).then(([pooled, inOrder, , thrown, imported]) =>
  console.log(
    JSON.stringify({
      pooled,
      inOrder,
      held: ledger.held,
      frees: ticket.frees,
      sameRxjs: pooled$ instanceof Observable,
      routed: thrown,
      noOutcome: new kit.NoOutcomeError().name,
      sameKit: imported.PausedError === kit.PausedError && new imported.PausedError() instanceof kit.PausedError,
    }),
  ),
);
