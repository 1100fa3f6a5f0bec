import { map, of, throwError } from 'rxjs';
import { PauseGate, done, failed } from '@rxfleet/operators';
import { CycleError } from '../../../lib/provision/cycleError';
import { NodeBackoff, backoffDelay, failureOfNode } from '../../../lib/provision/nodeBackoff';
import { CycleOutcome, HostTicket, provisionPipeline } from '../../../lib/provision/pipeline';
import { newScheduler } from '../../helpers/marbles';

const deferred = failed(new CycleError('n1', 'defer', 'configuration defered: not yet'));

describe('backoffDelay', () => {
  it('is the interval after one failure, doubling after each further one, never past the ceiling; 0 with no ceiling', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((k) => backoffDelay(k, 60, 600))).toEqual([60, 120, 240, 480, 600, 600, 600, 600]);
    expect(backoffDelay(0, 60, 600)).toBe(0);
    expect(backoffDelay(3, 60, 0)).toBe(0);
    expect(backoffDelay(10_000, 60, 3_600)).toBe(3_600);
  });
});

describe('failureOfNode', () => {
  it("counts the node's failures, forgives success, and ignores what says nothing about the node", () => {
    expect(failureOfNode(deferred)).toBe(true);
    expect(failureOfNode(failed(new Error('a bug')))).toBe(true);
    expect(failureOfNode(done('provisioned'))).toBe(false);
    expect(failureOfNode(done('shutdown'))).toBe(false);
    expect(failureOfNode(done('upgraded'))).toBe(false);
    for (const step of ['stale', 'claim', 'aborted'] as const)
      expect(failureOfNode(failed(new CycleError('n1', step, 'x')))).toBeUndefined();
    expect(failureOfNode(done('claimed'))).toBeUndefined();
    expect(failureOfNode(done('locked'))).toBeUndefined();
  });
});

describe('NodeBackoff', () => {
  it('refuses a failing node until its wait is over, lengthening it with each failure; a success forgets it', () => {
    const sizes: number[] = [];
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 35, onSize: (n) => sizes.push(n) });
    expect(backoff.admits('n1', 'discovery', 0)).toEqual({ admit: true });
    expect(backoff.settle('n1', deferred, 0)).toEqual({ failures: 1, failingSince: 0, lastFailedAt: 0, until: 10 });
    expect(backoff.admits('n1', 'discovery', 9)).toMatchObject({ admit: false, entry: { until: 10 } });
    expect(backoff.admits('n1', 'discovery', 10)).toEqual({ admit: true });
    expect(backoff.settle('n1', deferred, 12)).toEqual({ failures: 2, failingSince: 0, lastFailedAt: 12, until: 32 });
    expect(backoff.settle('n1', deferred, 32)).toMatchObject({ failures: 3, until: 67 });
    // The ceiling: 35, not 80.
    expect(backoff.settle('n1', deferred, 70)).toMatchObject({ failures: 4, until: 105 });
    expect(backoff.failing).toBe(1);
    expect(backoff.settle('n1', done('provisioned'), 110)).toBeUndefined();
    expect(backoff.failing).toBe(0);
    expect(backoff.admits('n1', 'discovery', 111)).toEqual({ admit: true });
    expect(sizes).toEqual([1, 0]);
  });

  it("the node's own startup event (or its Incus instance coming up) forgets the backoff and is admitted at once", () => {
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 100 });
    backoff.settle('n1', deferred, 0);
    backoff.settle('n2', deferred, 0);
    expect(backoff.admits('n1', 'event', 1)).toMatchObject({ admit: true, reset: { failures: 1 } });
    expect(backoff.entry('n1')).toBeUndefined();
    expect(backoff.admits('n2', 'incus', 1)).toMatchObject({ admit: true, reset: { failures: 1 } });
    expect(backoff.failing).toBe(0);
  });

  it('outcomes that are not the node’s (stale, claim, locked) change nothing; with no ceiling nothing is kept', () => {
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 100 });
    backoff.settle('n1', deferred, 0);
    backoff.settle('n1', failed(new CycleError('n1', 'stale', 'waited')), 5);
    backoff.settle('n1', done('locked'), 6);
    expect(backoff.entry('n1')).toMatchObject({ failures: 1, until: 10 });
    const off = new NodeBackoff({ baseMs: 10, ceilingMs: 0 });
    expect(off.enabled).toBe(false);
    off.settle('n1', deferred, 0);
    expect(off.failing).toBe(0);
    expect(off.admits('n1', 'discovery', 0)).toEqual({ admit: true });
  });

  it('forgets a node no longer sighted a ceiling after its wait ended, so the table holds the failing fleet only', () => {
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 50 });
    backoff.settle('gone', deferred, 0);
    backoff.settle('here', deferred, 40);
    backoff.prune(60);
    expect(backoff.failing).toBe(2);
    backoff.prune(61);
    expect([...backoff.list()].map(([node]) => node)).toEqual(['here']);
  });

  it('checks its options when made', () => {
    expect(() => new NodeBackoff({ baseMs: 0, ceilingMs: 1 })).toThrow(RangeError);
    expect(() => new NodeBackoff({ baseMs: 1, ceilingMs: -1 })).toThrow(RangeError);
  });
});

describe('provisionPipeline with a backoff (P22)', () => {
  const summary = (r: { ticket: HostTicket; outcome: { status: string } }): string => `${r.ticket.key}:${r.outcome.status}`;

  it('a node that keeps failing is tried at rounds 0, 1, 3 and 7 (waits of 1, 2, 4 intervals), the healthy one at every sighting', () => {
    const scheduler = newScheduler();
    const log: string[] = [];
    scheduler.run(({ cold, expectObservable }) => {
      const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 40 });
      const result = provisionPipeline({
        discover: () => of(['bad', 'good']),
        startupEvents: cold('-'),
        gate: new PauseGate(),
        backoff,
        // The bad node's cycle errors, as the daemon's cycles do: the backoff sees it.
        provision: (ticket) =>
          ticket.key === 'bad' ? throwError(() => new CycleError('bad', 'defer', 'not yet')) : of(done('upgraded') as CycleOutcome),
        interval: 10,
        workers: 2,
        hooks: { backedOff: (s, until) => log.push(`${scheduler.now()} ${s.identity} waits until ${until}`) },
        scheduler,
      }).pipe(map(summary));
      expectObservable(result.pipe(map((s) => (s.startsWith('bad') ? 'b' : 'g'))), '75ms !').toBe(
        '(bg)------(bg)------(g)-------(bg)------(g)-------(g)-------(g)-------(bg)',
      );
    });
    expect(log).toEqual(['20 bad waits until 30', '40 bad waits until 70', '50 bad waits until 70', '60 bad waits until 70']);
  });

  it("the node's startup event lets it in at once, in the middle of its wait", () => {
    const scheduler = newScheduler();
    scheduler.run(({ hot, expectObservable }) => {
      const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 1000 });
      let cycles = 0;
      const result = provisionPipeline({
        discover: () => of(['bad']),
        startupEvents: hot('-------------e', { e: 'bad' }),
        gate: new PauseGate(),
        backoff,
        // A cycle that fails errors (as the daemon's does); the backoff sees it all the same.
        provision: () => (cycles++ < 2 ? throwError(() => new CycleError('bad', 'defer', 'x')) : of(done('provisioned') as CycleOutcome)),
        interval: 10,
        workers: 1,
        scheduler,
      }).pipe(map(summary));
      // Round 0 fails (wait 10), round 10 fails (wait 20, until 30); the event at 13 lets it in.
      expectObservable(result, '25ms !').toBe('a---------a--b', { a: 'bad:failed', b: 'bad:done' });
    });
  });
});
