import fc from 'fast-check';
import { EMPTY, NEVER, Observable, concat, concatMap, defer, ignoreElements, of, tap, throwError, timer } from 'rxjs';
import { workDone, workFailed } from '@rxfleet/operators';
import { trackingScheduler } from '@rxfleet/operators/testing';
import { ClaimStore, NodeClaims } from '../../../../lib/provision/claims/claims';
import { CycleOutcome, CycleResult } from '../../../../lib/provision/cycle/cycleResult';
import { HostTicket } from '../../../../lib/provision/sightings/sighting';
import { CycleError } from '../../../../lib/provision/cycle/provisionCycle';
import { NoRespondersError } from '../../../../lib/choria/errors';
import { MemoryClaimBucket } from '../../../../streams/memory/memoryClaimBucket';
import { newScheduler } from '../../../helpers/marbles';

// Several instances claim one node in one bucket, in virtual time; the bucket is the in-memory
// model of a JetStream KV bucket with a max age. The claim's numbers are small so that a run sees
// many lifetimes: a claim lives 30 frames, is written again every 10, a failed write is tried
// again after 3, a kept node's cycle is run again after 5.
const NODE = 'n1';
const TTL = 30;
const REFRESH = 10;
const RETRY = 3;
const RERUN = 5;
// A run that has not ended by then is a claim that never lets go: its visits are stopped and the
// run fails.
const HORIZON = 3000;

type Ending = 'provisioned' | 'shutdown' | 'upgraded' | 'answered' | 'mayBeConfigured' | 'unanswered' | 'error' | 'complete' | 'never';

/** One run of a node's cycle: the pauses before each of its RPC attempts, then how it ends. */
interface Run {
  attempts: number[];
  ending: Ending;
}

/** One sighting of the node by an instance: when (after its last one ended), how old, its cycle's runs, and a hard stop. */
interface Visit {
  gap: number;
  age: number;
  runs: Run[];
  stopAfter: number | undefined;
}

interface Instance {
  /** Frames before the bucket's answers reach this instance. */
  latency: number;
  visits: Visit[];
}

/** A time the bucket cannot take an instance's writes: not written (`timeout`), or written with the answer lost (`lostAck`). */
interface Fault {
  instance: number;
  from: number;
  length: number;
  kind: 'timeout' | 'lostAck';
}

interface World {
  instances: Instance[];
  faults: Fault[];
  /** When an administrator writes the node's key over whoever holds it. */
  takeovers: number[];
}

const ending = fc.constantFrom<Ending>(
  'provisioned',
  'shutdown',
  'upgraded',
  'answered',
  'mayBeConfigured',
  'mayBeConfigured',
  'unanswered',
  'unanswered',
  'error',
  'complete',
  'never',
);
const run: fc.Arbitrary<Run> = fc.record({ attempts: fc.array(fc.integer({ min: 1, max: 15 }), { maxLength: 4 }), ending });
const visit: fc.Arbitrary<Visit> = fc
  .record({
    gap: fc.integer({ min: 0, max: 12 }),
    age: fc.integer({ min: 0, max: 35 }),
    runs: fc.array(run, { minLength: 1, maxLength: 3 }),
    stopAfter: fc.option(fc.integer({ min: 1, max: 80 }), { nil: undefined }),
  })
  // A cycle that never ends is stopped: a claim held forever is the one thing no instance may do.
  .map((v) => (v.runs.some((r) => r.ending === 'never') && v.stopAfter === undefined ? { ...v, stopAfter: 40 } : v));
const world: fc.Arbitrary<World> = fc.integer({ min: 2, max: 3 }).chain((n) =>
  fc.record({
    instances: fc.array(fc.record({ latency: fc.integer({ min: 0, max: 2 }), visits: fc.array(visit, { minLength: 1, maxLength: 6 }) }), {
      minLength: n,
      maxLength: n,
    }),
    faults: fc.array(
      fc.record({
        instance: fc.integer({ min: 0, max: n - 1 }),
        from: fc.integer({ min: 0, max: 200 }),
        length: fc.integer({ min: 1, max: 45 }),
        kind: fc.constantFrom<'timeout' | 'lostAck'>('timeout', 'timeout', 'lostAck'),
      }),
      { maxLength: 5 },
    ),
    takeovers: fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 3 }),
  }),
);

const mayBeConfigured = new CycleError(NODE, 'configure', 'configuration failed: nothing is listening', { nodeMayBeConfigured: true });
const unanswered = new CycleError(NODE, 'jwt', 'could not fetch and validate JWT', {
  cause: new NoRespondersError('choria_provision#jwt', NODE),
});
const answered = new CycleError(NODE, 'defer', 'configuration defered: later');
const ENDINGS: Record<Ending, () => Observable<CycleOutcome>> = {
  provisioned: () => of(workDone<CycleResult>('provisioned')),
  shutdown: () => of(workDone<CycleResult>('shutdown')),
  upgraded: () => of(workDone<CycleResult>('upgraded')),
  answered: () => of(workFailed(answered)),
  mayBeConfigured: () => of(workFailed(mayBeConfigured)),
  unanswered: () => of(workFailed(unanswered)),
  error: () => throwError(() => new Error('the cycle broke')),
  complete: () => EMPTY,
  never: () => NEVER,
};

/** What happened, in the order it happened (several entries may share a frame). */
type Entry =
  | { what: 'sent'; i: number; op: 'create' | 'update' | 'adopt' | 'release'; at: number; revision?: number }
  | {
      what: 'answered';
      i: number;
      op: 'create' | 'update' | 'adopt' | 'release';
      sentAt: number;
      ok: boolean;
      at: number;
      revision?: number;
    }
  | { what: 'attempt'; i: number; at: number; holder: string | undefined }
  | { what: 'held'; i: number; count: number; at: number }
  | { what: 'lapsed' | 'kept' | 'won'; i: number; at: number }
  | { what: 'takeover'; at: number }
  | { what: 'cycleStarted' | 'cycleStopped'; i: number; at: number }
  | { what: 'visitEnded'; i: number; at: number; keeps: boolean; held: number };

/** How the promises were exercised over all runs: each must have happened at least once. */
const seen = new Map<string, number>();
const saw = (what: string): void => void seen.set(what, (seen.get(what) ?? 0) + 1);

/** Runs one generated world to its end and returns what happened. */
function play(w: World): { log: Entry[]; armed: number[]; held: number[] } {
  const ts = newScheduler();
  const log: Entry[] = [];
  const trackers = w.instances.map(() => trackingScheduler(ts));
  const claims: NodeClaims[] = [];
  ts.run(() => {
    const now = (): number => ts.now();
    const bucket = new MemoryClaimBucket({ ttlMs: TTL, now });
    const owner = (i: number): string => `prov-${i}`;
    for (const at of w.takeovers)
      ts.schedule(() => {
        bucket.put(NODE, 'intruder');
        log.push({ what: 'takeover', at: now() });
      }, at);

    // The bucket as instance i reaches it: a write is made when it is sent (not at all in a
    // `timeout` fault) and answered `latency` frames later (with its answer lost in a `lostAck`
    // fault), as a JetStream leader writes and then acknowledges.
    const store = (i: number): ClaimStore => {
      const real = bucket.store();
      const faultAt = (at: number): Fault['kind'] | undefined =>
        w.faults.find((f) => f.instance === i && at >= f.from && at < f.from + f.length)?.kind;
      const write = <T>(op: 'create' | 'update' | 'adopt' | 'release', apply: () => Observable<T>, revision?: number): Observable<T> =>
        defer(() => {
          const sentAt = now();
          log.push({ what: 'sent', i, op, at: sentAt, revision });
          const fault = faultAt(sentAt);
          let answer: { value: T } | { error: unknown } = { error: new Error('timeout') };
          if (fault !== 'timeout')
            apply().subscribe({ next: (value) => (answer = { value }), error: (error: unknown) => (answer = { error }) });
          if (fault === 'lostAck') answer = { error: new Error('timeout') };
          const deliver = new Observable<T>((subscriber) => {
            log.push({ what: 'answered', i, op, sentAt, ok: 'value' in answer, at: now(), revision });
            if ('value' in answer) {
              subscriber.next(answer.value);
              subscriber.complete();
            } else subscriber.error(answer.error);
          });
          return w.instances[i].latency === 0 ? deliver : timer(w.instances[i].latency, ts).pipe(concatMap(() => deliver));
        });
      return {
        ttl: () => of(TTL),
        create: (k, v) => write('create', () => defer(() => real.create(k, v))),
        update: (k, v, r) => write('update', () => defer(() => real.update(k, v, r)), r),
        adopt: (k, v) => write('adopt', () => defer(() => real.adopt!(k, v))),
        release: (k, r) => write('release', () => defer(() => real.release(k, r)), r),
      };
    };

    w.instances.forEach((instance, i) => {
      const c = new NodeClaims({
        store: store(i),
        owner: owner(i),
        ttlMs: TTL,
        refreshMs: REFRESH,
        retryMs: RETRY,
        rerunMs: RERUN,
        scheduler: trackers[i].scheduler,
        hooks: {
          won: () => log.push({ what: 'won', i, at: now() }),
          lapsed: () => log.push({ what: 'lapsed', i, at: now() }),
          kept: () => log.push({ what: 'kept', i, at: now() }),
          held: (count) => log.push({ what: 'held', i, count, at: now() }),
          lost: () => saw('lost'),
          failed: (operation) => saw(`failed ${operation}`),
        },
      });
      claims.push(c);

      // A cycle run: its attempts each wait for the attempt boundary, then it ends as generated.
      const cycle = (r: Run): Observable<CycleOutcome> =>
        new Observable<CycleOutcome>((subscriber) => {
          log.push({ what: 'cycleStarted', i, at: now() });
          const attempts = r.attempts.map((pause) =>
            timer(pause, ts).pipe(
              concatMap(() => c.attemptReady(NODE)),
              tap(() => log.push({ what: 'attempt', i, at: now(), holder: bucket.holder(NODE) })),
              ignoreElements(),
            ),
          );
          const inner = concat(...attempts, ENDINGS[r.ending]()).subscribe(subscriber);
          return () => {
            log.push({ what: 'cycleStopped', i, at: now() });
            inner.unsubscribe();
          };
        });

      const visitAt = (k: number): void => {
        const v = instance.visits[k];
        if (v === undefined) return;
        ts.schedule(() => {
          let runs = 0;
          let outcome: CycleOutcome | undefined;
          let ended = false;
          const end = (): void => {
            if (ended) return;
            ended = true;
            const keeps =
              (outcome?.status === 'done' && (outcome.value === 'provisioned' || outcome.value === 'shutdown')) ||
              log.some((e) => e.what === 'kept' && e.i === i && e.at >= started);
            log.push({ what: 'visitEnded', i, at: now(), keeps, held: c.held });
            visitAt(k + 1);
          };
          const started = now();
          const ticket = { key: NODE, admittedAt: started - v.age } as unknown as HostTicket;
          const stage = c
            .around(ticket, () => cycle(v.runs[Math.min(runs++, v.runs.length - 1)]))
            .subscribe({
              next: (o) => (outcome = o),
              error: end,
              complete: end,
            });
          const stop = (): void => {
            if (ended) return;
            stage.unsubscribe();
            end();
          };
          if (v.stopAfter !== undefined) ts.schedule(stop, v.stopAfter);
          ts.schedule(stop, HORIZON - now());
        }, v.gap);
      };
      visitAt(0);
    });
  });
  return { log, armed: trackers.map((t) => t.armed()), held: claims.map((c) => c.held) };
}

type Answer = Extract<Entry, { what: 'answered' }>;
const byInstance = (e: Entry, i: number): boolean => 'i' in e && e.i === i;
/** An answer to a write that claims or keeps the claim (not a delete). */
const claimWrite = (e: Entry, i: number): e is Answer => e.what === 'answered' && e.i === i && e.op !== 'release';

/** The promises, checked against what happened, in the order it happened. */
function check(w: World, log: Entry[]): void {
  // Every visit ended, well before the horizon, and none held a claim past its end.
  const ends = log.filter((e): e is Extract<Entry, { what: 'visitEnded' }> => e.what === 'visitEnded');
  expect(ends.length).toBe(w.instances.reduce((n, s) => n + s.visits.length, 0));
  expect(ends.filter((e) => e.at >= HORIZON || e.held !== 0)).toEqual([]);

  const running = new Set<number>();
  const lastAckSent = new Map<number, number>();
  log.forEach((e, index) => {
    switch (e.what) {
      case 'cycleStarted':
        // Never two holders: no two instances' cycles run at once.
        if (running.size > 0 && !running.has(e.i)) expect({ started: e, alreadyRunning: [...running] }).toBeUndefined();
        running.add(e.i);
        return;
      case 'cycleStopped':
      case 'answered': {
        // No cycle runs past a TTL from its instance's last acknowledged write: checked where the
        // gaps are longest, at the next acknowledgement and at the cycle's end.
        const since = e.at - (lastAckSent.get(e.i) ?? -Infinity);
        if (running.has(e.i) && since > TTL) expect({ runningPastItsLease: e, since }).toBeUndefined();
        if (e.what === 'cycleStopped') running.delete(e.i);
        else if (claimWrite(e, e.i) && e.ok) lastAckSent.set(e.i, e.sentAt);
        return;
      }
      case 'attempt': {
        // An attempt starts only under a confirmed lease whose last acknowledged write was sent
        // within the TTL less one refresh period, while the model bucket holds the node for that
        // instance (unless an administrator wrote it since, which only the next refresh can tell).
        saw('attempt');
        const last = log
          .slice(0, index)
          .reverse()
          .find((x): x is Answer => claimWrite(x, e.i));
        expect([e, last?.ok]).toEqual([e, true]);
        if (e.at - last!.sentAt > TTL - REFRESH) expect({ staleAttempt: e, lastWrite: last }).toBeUndefined();
        const takenOver = log.slice(0, index).some((x) => x.what === 'takeover' && x.at >= last!.sentAt);
        if (!takenOver) expect([e, e.holder]).toEqual([e, `prov-${e.i}`]);
        return;
      }
      case 'held': {
        // Every lease let go is given back at once (a delete, or a last write when the node keeps
        // it) or has lapsed.
        if (e.count !== 0) return;
        const next = log.slice(index + 1).find((x) => byInstance(x, e.i) && (x.what === 'sent' || x.what === 'lapsed'));
        expect([e, next?.at]).toEqual([e, e.at]);
        if (next?.what === 'lapsed') return saw('lapsed');
        const visit = log.slice(index + 1).find((x): x is Extract<Entry, { what: 'visitEnded' }> => x.what === 'visitEnded' && x.i === e.i);
        expect([e, next?.what === 'sent' && next.op]).toEqual([e, visit?.keeps ? 'update' : 'release']);
        return saw(visit?.keeps ? 'written last' : 'released');
      }
      default:
        return;
    }
  });
  expect(running.size).toBe(0);

  // A delete the bucket could not take is tried again every RETRY frames until it succeeds or the
  // claim would have aged out (a TTL from the first).
  const releases = (x: Entry, i: number, revision: number | undefined): boolean =>
    x.what === 'sent' && x.op === 'release' && x.i === i && x.revision === revision;
  for (const failed of log.filter((x): x is Answer => x.what === 'answered' && x.op === 'release' && !x.ok)) {
    const first = log.find((x) => releases(x, failed.i, failed.revision))!;
    if (failed.at + RETRY >= first.at + TTL) continue;
    saw('release retried');
    const retried = log.some((x) => releases(x, failed.i, failed.revision) && x.at === failed.at + RETRY);
    expect({ failed, retried }).toEqual({ failed, retried: true });
  }
}

describe('the claim machine: random interleavings in virtual time (properties)', () => {
  it('never two holders of a node, no attempt without a fresh lease, no cycle past its lease, every lease let go and nothing left armed', () => {
    fc.assert(
      fc.property(world, (w) => {
        const { log, armed, held } = play(w);
        check(w, log);
        expect({ armed, held }).toEqual({ armed: armed.map(() => 0), held: held.map(() => 0) });
        for (const e of log) if (e.what === 'won' || e.what === 'kept' || e.what === 'takeover') saw(e.what);
      }),
      { numRuns: 300 },
    );
    // The runs reached every path the promises are about.
    const paths = ['won', 'lost', 'lapsed', 'kept', 'takeover', 'attempt', 'released', 'written last', 'release retried'];
    expect(paths.filter((p) => !seen.has(p))).toEqual([]);
    expect(['failed create', 'failed refresh', 'failed release'].filter((p) => !seen.has(p))).toEqual([]);
  });
});
