import { map, of, throwError } from 'rxjs';
import { PauseGate, done, failed } from '@rxfleet/operators';
import { RpcConnectionLostError } from '../../../../lib/choria/errors';
import { CycleError } from '../../../../lib/provision/cycle/cycleError';
import { NodeBackoff, backoffDelay, failureOfNode } from '../../../../lib/provision/backoff/nodeBackoff';
import { provisionPipeline } from '../../../../lib/provision/pipeline';
import { newScheduler } from '../../../helpers/marbles';
import { CycleOutcome } from '../../../../lib/provision/cycle/cycleResult';
import { HostTicket } from '../../../../lib/provision/sightings/sighting';

const deferred = failed(new CycleError('n1', 'defer', 'configuration defered: not yet'));

describe('backoffDelay', () => {
  it('is nothing after one failure (the next round, as upstream), then 1, 3, 7 ... intervals, never past the ceiling; 0 with no ceiling', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((k) => backoffDelay(k, 60, 600))).toEqual([0, 60, 180, 420, 600, 600, 600, 600]);
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
    const lost = new CycleError('n1', 'configure', 'configuration failed', {
      cause: new RpcConnectionLostError('choria_provision#configure', 'n1'),
    });
    expect(failureOfNode(failed(lost))).toBeUndefined();
    expect(failureOfNode(done('locked'))).toBeUndefined();
  });
});

describe('NodeBackoff', () => {
  it('refuses a failing node until its wait is over, lengthening it with each failure; a success forgets it', () => {
    const sizes: number[] = [];
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 35, onSize: (n) => sizes.push(n) });
    expect(backoff.admits('n1', 'discovery', 0)).toEqual({ admit: true });
    // The first failure: tried again at the next sighting, as upstream.
    expect(backoff.settle('n1', deferred, 1)).toEqual({ failures: 1, failingSince: 1, lastFailedAt: 1, until: 1 });
    expect(backoff.admits('n1', 'discovery', 10)).toEqual({ admit: true });
    expect(backoff.settle('n1', deferred, 11)).toEqual({ failures: 2, failingSince: 1, lastFailedAt: 11, until: 21 });
    expect(backoff.admits('n1', 'discovery', 20)).toMatchObject({ admit: false, entry: { until: 21 } });
    expect(backoff.admits('n1', 'discovery', 30)).toEqual({ admit: true });
    expect(backoff.settle('n1', deferred, 31)).toMatchObject({ failures: 3, until: 61 });
    // The ceiling: 35, not 70.
    expect(backoff.settle('n1', deferred, 71)).toMatchObject({ failures: 4, until: 106 });
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
    expect(backoff.entry('n1')).toMatchObject({ failures: 1, lastFailedAt: 0 });
    const off = new NodeBackoff({ baseMs: 10, ceilingMs: 0 });
    expect(off.enabled).toBe(false);
    off.settle('n1', deferred, 0);
    expect(off.failing).toBe(0);
    expect(off.admits('n1', 'discovery', 0)).toEqual({ admit: true });
  });

  it('forgets a node no longer sighted a ceiling after its wait ended, so the table holds the failing fleet only', () => {
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 50 });
    backoff.settle('gone', deferred, 0);
    backoff.settle('gone', deferred, 0);
    backoff.settle('here', deferred, 40);
    // gone waits until 10: forgotten after 60.
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
  it('a cycle that ends while paused (a lost election) was stopped by the pause: no backoff for its node', () => {
    const scheduler = newScheduler();
    const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 1000 });
    scheduler.run(({ cold, expectObservable }) => {
      const gate = new PauseGate();
      scheduler.schedule(() => gate.pause(), 2);
      const result = provisionPipeline({
        discover: () => of(['n1']),
        startupEvents: cold('-'),
        gate,
        backoff,
        provision: () => cold('----#', {}, new CycleError('n1', 'configure', 'provisioning is paused')),
        interval: 10,
        workers: 1,
        scheduler,
      }).pipe(map((r) => r.outcome.status));
      expectObservable(result, '6ms !').toBe('----f', { f: 'failed' });
    });
    expect(backoff.failing).toBe(0);
  });

  const summary = (r: { ticket: HostTicket; outcome: { status: string } }): string => `${r.ticket.key}:${r.outcome.status}`;

  it('a node that keeps failing is tried at rounds 0, 1, 3 and 7 (1, 3 rounds skipped ...), the healthy one at every sighting', () => {
    const scheduler = newScheduler();
    const log: string[] = [];
    scheduler.run(({ cold, expectObservable }) => {
      const backoff = new NodeBackoff({ baseMs: 10, ceilingMs: 40 });
      const result = provisionPipeline({
        discover: () => of(['bad', 'good']),
        startupEvents: cold('-'),
        gate: new PauseGate(),
        backoff,
        // Each cycle takes a frame; the bad node's errors, as the daemon's cycles do: the backoff sees it.
        provision: (ticket) =>
          ticket.key === 'bad'
            ? cold('-#', {}, new CycleError('bad', 'defer', 'not yet'))
            : cold('-d', { d: done('upgraded') as CycleOutcome }),
        interval: 10,
        workers: 2,
        hooks: { backedOff: (s, until) => log.push(`${scheduler.now()} ${s.identity} waits until ${until}`) },
        scheduler,
      }).pipe(map(summary));
      expectObservable(result.pipe(map((s) => (s.startsWith('bad') ? 'b' : 'g'))), '76ms !').toBe(
        '-(bg)------(bg)------(g)-------(bg)------(g)-------(g)-------(g)-------(bg)',
      );
    });
    expect(log).toEqual(['20 bad waits until 21', '40 bad waits until 61', '50 bad waits until 61', '60 bad waits until 61']);
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
