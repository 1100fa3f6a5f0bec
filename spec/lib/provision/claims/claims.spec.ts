import { Observable, defer, from, map, of, throwError } from 'rxjs';
import { workDone, workFailed } from '@rxfleet/operators';
import {
  ClaimHeldError,
  ClaimStore,
  ClaimStoreClosedError,
  NodeClaims,
  claimKey,
  readClaimsTtl,
  rotateRound,
} from '../../../../lib/provision/claims/claims';
import { CycleOutcome } from '../../../../lib/provision/cycle/cycleResult';
import { HostTicket } from '../../../../lib/provision/sightings/sighting';
import { CycleError } from '../../../../lib/provision/cycle/provisionCycle';
import { NoRespondersError } from '../../../../lib/choria/errors';
import { MemoryClaimBucket } from '../../../../streams/memory/memoryClaimBucket';
import { newScheduler } from '../../../helpers/marbles';

const OWNER = 'prov-a.example.net';
const ticket = (identity: string, admittedAt = 0): HostTicket => ({ key: identity, admittedAt }) as unknown as HostTicket;
const provisioned = workDone('provisioned') as CycleOutcome;

/** What an outcome says, in a word: `done:<value>` or `failed:<step>`. */
const said = (o: CycleOutcome): string =>
  o.status === 'done' ? `done:${o.value}` : `failed:${o.error instanceof CycleError ? o.error.step : String(o.error)}`;

/** Records the hooks as `<frame> <what> <identity>`. */
function recording(now: () => number) {
  const log: string[] = [];
  const at = (what: string) => (identity: string) => log.push(`${now()} ${what} ${identity}`);
  return {
    log,
    hooks: {
      won: at('won'),
      lost: at('lost'),
      lapsed: (id: string, why: string) => log.push(`${now()} lapsed ${id}: ${why}`),
      failed: (op: string, id: string) => log.push(`${now()} ${op} failed ${id}`),
    },
  };
}

describe('NodeClaims: a cycle under a claim in a KV bucket (virtual time)', () => {
  it('a free node is claimed, its cycle runs, and a provisioned node keeps its claim until it ages out', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const { hooks, log } = recording(() => scheduler.now());
      const held: number[] = [];
      const revisions: number[] = [];
      bucket.put('other', 'prov-b.example.net');
      const claims = new NodeClaims({
        store: bucket.store(),
        owner: OWNER,
        ttlMs: 30,
        scheduler,
        hooks: {
          ...hooks,
          held: (n) => held.push(n),
          won: (node, revision) => {
            hooks.won(node);
            revisions.push(revision);
          },
        },
      });
      const cycle = cold('-----d', { d: provisioned });
      expectObservable(claims.around(ticket('n1'), () => cycle).pipe(map(said))).toBe('-----(d|)', { d: 'done:provisioned' });
      expectSubscriptions(cycle.subscriptions).toBe('^----!');
      flush();
      expect(log).toEqual(['0 won n1']);
      // Won at the create's revision (the bucket's second write), for the cycle's record.
      expect(revisions).toEqual([2]);
      expect(held).toEqual([1, 0]);
      // Written again at the end, so it lives 30 frames from frame 5.
      expect(bucket.holder('n1')).toBe(OWNER);
      scheduler.schedule(() => expect(bucket.holder('n1')).toBe(OWNER), 29);
      scheduler.schedule(() => expect(bucket.holder('n1')).toBeUndefined(), 30);
    });
  });

  it('a cycle that fails releases the claim at once, and so does an upgrade', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, scheduler });
      expectObservable(
        claims.around(ticket('n1'), () => cold('--f', { f: workFailed(new Error('helper')) as CycleOutcome })).pipe(map(said)),
      ).toBe('--(f|)', { f: 'failed:Error: helper' });
      expectObservable(claims.around(ticket('n2'), () => cold('--u', { u: workDone('upgraded') as CycleOutcome })).pipe(map(said))).toBe(
        '--(u|)',
        { u: 'done:upgraded' },
      );
      flush();
      expect(bucket.holder('n1')).toBeUndefined();
      expect(bucket.holder('n2')).toBeUndefined();
    });
  });

  it('a node another instance holds is not worked on: the outcome is claimed and its cycle never runs', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      bucket.put('n1', 'prov-b.example.net');
      const { hooks, log } = recording(() => scheduler.now());
      const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, scheduler, hooks });
      const cycle = cold('-d', { d: provisioned });
      expectObservable(claims.around(ticket('n1'), () => cycle).pipe(map(said))).toBe('(c|)', { c: 'done:claimed' });
      expectSubscriptions(cycle.subscriptions).toBe([]);
      flush();
      expect(log).toEqual(['0 lost n1']);
      expect(bucket.holder('n1')).toBe('prov-b.example.net');
    });
  });

  it('a claim is written again while its cycle runs, so a cycle longer than the TTL keeps it', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, scheduler });
      const other = new NodeClaims({ store: bucket.store(), owner: 'prov-b.example.net', ttlMs: 30, scheduler });
      expectObservable(claims.around(ticket('n1'), () => cold('100ms d', { d: provisioned })).pipe(map(said))).toBe('100ms (d|)', {
        d: 'done:provisioned',
      });
      // Another instance trying at frame 95 finds it held.
      scheduler.schedule(
        () => other.around(ticket('n1', 95), () => of(provisioned)).subscribe((o) => expect(said(o)).toBe('done:claimed')),
        95,
      );
      flush();
    });
  });

  it('a claim someone else writes lapses at the next refresh: the cycle is stopped at once and fails with step claim', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const { hooks, log } = recording(() => scheduler.now());
      const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, scheduler, hooks });
      const cycle = cold('100ms d', { d: provisioned });
      scheduler.schedule(() => bucket.put('n1', 'intruder'), 12);
      expectObservable(claims.around(ticket('n1'), () => cycle).pipe(map(said))).toBe('20ms (l|)', { l: 'failed:claim' });
      expectSubscriptions(cycle.subscriptions).toBe('^ 19ms !');
      flush();
      expect(log).toEqual(['0 won n1', '20 lapsed n1: another provisioner wrote it']);
      expect(bucket.holder('n1')).toBe('intruder');
    });
  });

  it('a claim that cannot be written again (the broker unreachable) lapses one TTL after the last write sent: the cycle is stopped, and the node claimed again and its cycle run afresh until the sighting is stale', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const real = bucket.store();
      // Writes fail from frame 15 on, with an error that is not "held".
      const store: ClaimStore = {
        ...real,
        update: (k, v, r) => defer(() => (scheduler.now() >= 15 ? throwError(() => new Error('timeout')) : real.update(k, v, r))),
      };
      const { hooks, log } = recording(() => scheduler.now());
      // Failed refreshes tried again only by the refresh timer here (retries: the next test).
      const claims = new NodeClaims({ store, owner: OWNER, ttlMs: 30, retryMs: 100, scheduler, hooks });
      const cycle = cold('100ms d', { d: provisioned });
      // Refreshed at 10 (ok), 20 and 30 (fail): it lapses at 10 + 30, when the sighting (at 0) is
      // older than a claim lives: refused as stale rather than claimed again.
      expectObservable(claims.around(ticket('n1'), () => cycle).pipe(map(said))).toBe('40ms (s|)', { s: 'failed:stale' });
      expectSubscriptions(cycle.subscriptions).toBe('^ 39ms !');
      flush();
      expect(log).toEqual([
        '0 won n1',
        '20 refresh failed n1',
        '30 refresh failed n1',
        '40 lapsed n1: not written again within its 30ms lifetime',
      ]);
    });
  });

  it('a claim that lapsed because the bucket could not be written is claimed again as soon as it can be, and its cycle run afresh: no failed node', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const real = bucket.store();
      // Refreshes fail from 5 to 39 (no quorum); creates always reach the bucket.
      const store: ClaimStore = {
        ...real,
        update: (k, v, r) =>
          defer(() => (scheduler.now() >= 5 && scheduler.now() < 40 ? throwError(() => new Error('timeout')) : real.update(k, v, r))),
      };
      const { hooks, log } = recording(() => scheduler.now());
      const claims = new NodeClaims({ store, owner: OWNER, ttlMs: 30, retryMs: 100, scheduler, hooks });
      const cycle = cold('50ms d', { d: provisioned });
      // Lapses at 30 (last write at 0); the old claim aged out then, so it is claimed again at once.
      expectObservable(claims.around(ticket('n1'), () => cycle).pipe(map(said))).toBe('80ms (d|)', { d: 'done:provisioned' });
      expectSubscriptions(cycle.subscriptions).toBe(['^ 29ms !', '30ms ^ 49ms !']);
      flush();
      expect(log).toEqual([
        '0 won n1',
        '10 refresh failed n1',
        '20 refresh failed n1',
        '30 lapsed n1: not written again within its 30ms lifetime',
        '30 won n1',
      ]);
    });
  });

  it('a sighting older than a claim lives is refused before claiming', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, scheduler });
      const cycle = cold('-d', { d: provisioned });
      scheduler.schedule(() => {
        claims
          .around(ticket('old', 0), () => cycle)
          .subscribe((o) => {
            expect(said(o)).toBe('failed:stale');
            expect((o as { error: Error }).error.message).toBe(
              "skipping node that's been waiting 31ms: longer than a claim lives (30ms), so another provisioner may have finished it",
            );
          });
      }, 31);
      flush();
      expectSubscriptions(cycle.subscriptions).toBe([]);
      expect(bucket.size()).toBe(0);
    });
  });

  it('a create the bucket cannot take (no leader, no quorum) is no failed node: it is tried again every retryMs and the cycle starts at the first acknowledged one; a sighting that waits longer than a claim lives is then refused as stale', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const real = bucket.store();
      // The bucket has no leader until frame 12.
      const store: ClaimStore = {
        ...real,
        create: (k, v) => defer(() => (scheduler.now() < 12 ? throwError(() => new Error('jetstream is not enabled')) : real.create(k, v))),
      };
      const { hooks, log } = recording(() => scheduler.now());
      const claims = new NodeClaims({ store, owner: OWNER, ttlMs: 30, retryMs: 5, scheduler, hooks });
      const cycle = cold('-d', { d: provisioned });
      // Tried at 0, 5, 10 (refused), 15 (written): the cycle runs 15..16.
      expectObservable(claims.around(ticket('n1'), () => cycle).pipe(map(said))).toBe('16ms (d|)', { d: 'done:provisioned' });
      expectSubscriptions(cycle.subscriptions).toBe('15ms ^!');
      const never: ClaimStore = { ...real, create: () => throwError(() => new Error('timeout')) };
      const waiting = new NodeClaims({ store: never, owner: OWNER, ttlMs: 30, retryMs: 10, scheduler });
      // Tried at 0, 10, 20, 30; at 40 the sighting is older than a claim lives.
      expectObservable(waiting.around(ticket('n2'), () => cycle).pipe(map(said))).toBe('40ms (s|)', { s: 'failed:stale' });
      flush();
      expect(log).toEqual(['0 create failed n1', '5 create failed n1', '10 create failed n1', '15 won n1']);
      expect(bucket.holder('n2')).toBeUndefined();
    });
  });

  it('a create that timed out yet was written (a stream leader election) is adopted when tried again, rather than the node lost to this instance for a lifetime; one another instance wrote is not', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const real = bucket.store();
      // Before frame 3 a create is written but its acknowledgement lost.
      const store: ClaimStore = {
        ...real,
        create: (k, v) =>
          defer(() => {
            if (scheduler.now() >= 3) return from(real.create(k, v));
            bucket.put(k, v);
            return throwError(() => new Error('timeout'));
          }),
      };
      const { hooks, log } = recording(() => scheduler.now());
      const claims = new NodeClaims({ store, owner: OWNER, ttlMs: 30, retryMs: 3, scheduler, hooks });
      expectObservable(claims.around(ticket('n1'), () => cold('--d', { d: provisioned })).pipe(map(said))).toBe('-----(d|)', {
        d: 'done:provisioned',
      });
      // n2's lost create is overwritten by another instance before the retry: not ours to adopt.
      scheduler.schedule(() => bucket.put('n2', 'prov-b.example.net'), 1);
      expectObservable(claims.around(ticket('n2'), () => cold('--d', { d: provisioned })).pipe(map(said))).toBe('---(c|)', {
        c: 'done:claimed',
      });
      flush();
      expect(log).toEqual(['0 create failed n1', '0 create failed n2', '3 won n1', '3 lost n2']);
    });
  });

  it('the attempt boundary: after a refresh the bucket could not take, no attempt starts until a write is acknowledged again; a confirmed claim lets attempts through at once', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const real = bucket.store();
      // The bucket cannot be written from 15 to 24 (a stream leader election).
      const store: ClaimStore = {
        ...real,
        update: (k, v, r) =>
          defer(() => (scheduler.now() >= 15 && scheduler.now() < 25 ? throwError(() => new Error('timeout')) : real.update(k, v, r))),
      };
      const claims = new NodeClaims({ store, owner: OWNER, ttlMs: 30, retryMs: 3, scheduler });
      const attempts: string[] = [];
      const attemptAt = (frame: number): void =>
        void scheduler.schedule(() => claims.attemptReady('n1').subscribe(() => attempts.push(`${frame}->${scheduler.now()}`)), frame);
      // Refreshes: 10 ok, 20 fails (retried 23 fails, 26 ok).
      [5, 21, 24].forEach(attemptAt);
      expectObservable(claims.around(ticket('n1'), () => cold('50ms d', { d: provisioned })).pipe(map(said))).toBe('50ms (d|)', {
        d: 'done:provisioned',
      });
      // Not under a claim (single mode, or another node): never held up.
      expectObservable(claims.attemptReady('other')).toBe('(x|)', { x: undefined });
      flush();
      expect(attempts).toEqual(['5->5', '21->26', '24->26']);
    });
  });

  describe('a node this instance may have configured (cut off between its configure and its restart)', () => {
    // The partition spec's path to a node configured by two instances: a configure reached the node
    // and its reply was lost with the route (or the configured node's restart found nothing
    // listening); the cycle failed, its claim was deleted, and after the heal another instance
    // claimed the node and configured it again.
    const mayBeConfigured = workFailed(
      new CycleError('n1', 'configure', 'configuration failed: nothing is listening for n1', { nodeMayBeConfigured: true }),
    ) as CycleOutcome;
    const unanswered = workFailed(
      new CycleError('n1', 'jwt', 'could not fetch and validate JWT', { cause: new NoRespondersError('choria_provision#jwt', 'n1') }),
    ) as CycleOutcome;
    const refused = workFailed(new CycleError('n1', 'defer', 'configuration defered: later')) as CycleOutcome;

    it('keeps its claim and runs the cycle again while the node does not answer, so no other instance configures it; the node is provisioned when it answers', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
        const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
        const { hooks, log } = recording(() => scheduler.now());
        const kept: string[] = [];
        const claims = new NodeClaims({
          store: bucket.store(),
          owner: OWNER,
          ttlMs: 30,
          rerunMs: 5,
          scheduler,
          hooks: { ...hooks, kept: (id, e) => kept.push(`${scheduler.now()} ${id} ${said(workFailed(e) as CycleOutcome)}`) },
        });
        const other = new NodeClaims({ store: bucket.store(), owner: 'prov-b.example.net', ttlMs: 30, scheduler });
        const runs = [cold('--f', { f: mayBeConfigured }), cold('--u', { u: unanswered }), cold('--d', { d: provisioned })];
        let run = 0;
        expectObservable(claims.around(ticket('n1'), () => runs[run++]).pipe(map(said))).toBe('16ms (d|)', { d: 'done:provisioned' });
        expectSubscriptions(runs[0].subscriptions).toBe('^-!');
        expectSubscriptions(runs[1].subscriptions).toBe('-------^-!');
        expectSubscriptions(runs[2].subscriptions).toBe('--------------^-!');
        // Another instance finds the node claimed while it waits for its node, in either pause.
        const tries: string[] = [];
        for (const at of [4, 12])
          scheduler.schedule(
            () => other.around(ticket('n1', at), () => of(provisioned)).subscribe((o) => tries.push(`${at} ${said(o)}`)),
            at,
          );
        flush();
        expect(tries).toEqual(['4 done:claimed', '12 done:claimed']);
        expect(kept).toEqual(['2 n1 failed:configure', '9 n1 failed:jwt']);
        expect(log).toEqual(['0 won n1']);
        expect(bucket.holder('n1')).toBe(OWNER);
      });
    });

    it('gives the node up one claim lifetime after the first failure if it never answers, or at once when it answers with a failure; the claim is left to age out, not deleted', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable, flush }) => {
        const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
        const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, rerunMs: 5, scheduler });
        // Fails at 2 (kept from then), then runs at 7, 14, 21, 28 and 35, each failing 2 frames
        // later: the failure at 37 comes a lifetime (30) after 2, and stands.
        let silent = 0;
        expectObservable(
          claims
            .around(ticket('n1'), () => (silent++ === 0 ? cold('--f', { f: mayBeConfigured }) : cold('--u', { u: unanswered })))
            .pipe(map(said)),
        ).toBe('37ms (u|)', { u: 'failed:jwt' });
        // Answers at its second run (7): its failure at 9 stands.
        let answered = 0;
        expectObservable(
          claims
            .around(ticket('n2'), () => (answered++ === 0 ? cold('--f', { f: mayBeConfigured }) : cold('--r', { r: refused })))
            .pipe(map(said)),
        ).toBe('9ms (r|)', { r: 'failed:defer' });
        // A failure that cannot have left the node configured frees it at once, as before.
        expectObservable(claims.around(ticket('n3'), () => cold('--u', { u: unanswered })).pipe(map(said))).toBe('--(u|)', {
          u: 'failed:jwt',
        });
        const holders = (): Array<string | undefined> => ['n1', 'n2', 'n3'].map((n) => bucket.holder(n));
        const seen: string[] = [];
        // Written last at 37 and at 9, each left to live a lifetime from then.
        for (const at of [3, 38, 39, 66, 67]) scheduler.schedule(() => seen.push(`${at} ${holders().join(',')}`), at);
        flush();
        expect(seen).toEqual([`3 ${OWNER},${OWNER},`, `38 ${OWNER},${OWNER},`, `39 ${OWNER},,`, `66 ${OWNER},,`, '67 ,,']);
        expect(silent).toBe(6);
        expect(answered).toBe(2);
      });
    });
  });

  it('a delete the bucket cannot take (no leader) is tried again every retryMs, so the node is free as soon as the bucket answers; never after the store is closed', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const real = bucket.store();
      // Deletes fail from 0 to 11 (a stream leader election); n2's store is closed at 4.
      const store = (closedAt = Infinity): ClaimStore => ({
        ...real,
        release: (k, r) =>
          defer(() =>
            scheduler.now() >= closedAt
              ? throwError(() => new ClaimStoreClosedError(k))
              : scheduler.now() < 12
                ? throwError(() => new Error('timeout'))
                : real.release(k, r),
          ),
      });
      const { hooks, log } = recording(() => scheduler.now());
      const claims = new NodeClaims({ store: store(), owner: OWNER, ttlMs: 30, retryMs: 5, scheduler, hooks });
      const closing = new NodeClaims({ store: store(4), owner: OWNER, ttlMs: 30, retryMs: 5, scheduler });
      const helperFailed = workFailed(new Error('helper')) as CycleOutcome;
      expectObservable(claims.around(ticket('n1'), () => cold('--f', { f: helperFailed })).pipe(map(said))).toBe('--(f|)', {
        f: 'failed:Error: helper',
      });
      expectObservable(closing.around(ticket('n2'), () => cold('--f', { f: helperFailed })).pipe(map(said))).toBe('--(f|)', {
        f: 'failed:Error: helper',
      });
      const seen: string[] = [];
      for (const at of [11, 13])
        scheduler.schedule(() => seen.push(`${at} ${bucket.holder('n1') ?? '-'} ${bucket.holder('n2') ?? '-'}`), at);
      flush();
      // Tried at 2 and 7 (failed), at 12 deleted; n2 left to age out from its write at 0.
      expect(log).toEqual(['0 won n1', '2 release failed n1', '7 release failed n1']);
      expect(seen).toEqual([`11 ${OWNER} ${OWNER}`, `13 - ${OWNER}`]);
    });
  });

  it('a hook that throws errors the stage once: the cycle stops (or never starts), the lease is let go and the claim left to age out', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const broke = new Error('the hook broke');
      const held: number[] = [];
      const claims = new NodeClaims({
        store: bucket.store(),
        owner: OWNER,
        ttlMs: 30,
        scheduler,
        hooks: {
          held: (n) => held.push(n),
          won: (node) => {
            if (node === 'n1') throw broke;
          },
          kept: () => {
            throw broke;
          },
        },
      });
      const never = cold('-d', { d: provisioned });
      expectObservable(claims.around(ticket('n1'), () => never)).toBe('#', undefined, broke);
      expectSubscriptions(never.subscriptions).toBe([]);
      const mayBeConfigured = workFailed(new CycleError('n2', 'configure', 'unanswered', { nodeMayBeConfigured: true })) as CycleOutcome;
      const failing = cold('--f', { f: mayBeConfigured });
      expectObservable(claims.around(ticket('n2'), () => failing)).toBe('--#', undefined, broke);
      expectSubscriptions(failing.subscriptions).toBe('^-!');
      flush();
      expect(held).toEqual([1, 0, 1, 0]);
      expect(claims.held).toBe(0);
      expect([bucket.holder('n1'), bucket.holder('n2')]).toEqual([OWNER, OWNER]);
    });
  });

  it('unsubscribing before the cycle ends deletes the claim at once', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, flush }) => {
      const bucket = new MemoryClaimBucket({ ttlMs: 30, now: () => scheduler.now() });
      const claims = new NodeClaims({ store: bucket.store(), owner: OWNER, ttlMs: 30, scheduler });
      expectObservable(
        claims.around(ticket('n1'), () => cold('100ms d', { d: provisioned })),
        '5ms !',
      ).toBe('');
      scheduler.schedule(() => expect(bucket.holder('n1')).toBe(OWNER), 4);
      flush();
      expect(bucket.holder('n1')).toBeUndefined();
      expect(claims.held).toBe(0);
    });
  });
});

describe('claim keys, rounds and the bucket TTL', () => {
  it('a host name is its own key; anything else is encoded so that no two identities share one', () => {
    expect(claimKey('node-1.example.net')).toBe('node-1.example.net');
    expect(claimKey('has space')).toBe(`=${Buffer.from('has space').toString('base64url')}`);
    expect(claimKey('=x')).not.toBe('=x');
    expect(claimKey('a..b')).toMatch(/^=/);
    expect(new Set(['a b', 'a_b', '=YSBi', '.a', 'a.']).size).toBe(new Set(['a b', 'a_b', '=YSBi', '.a', 'a.'].map(claimKey)).size);
  });

  it('rotates a round so that instances start at different nodes, keeping the order', () => {
    expect(rotateRound(['a', 'b', 'c', 'd'], 2)).toEqual(['c', 'd', 'a', 'b']);
    expect(rotateRound(['a', 'b', 'c'], 7.9)).toEqual(['b', 'c', 'a']);
    expect(rotateRound([], 3)).toEqual([]);
  });

  it('reads the TTL with retries while the bucket cannot be read or has no max age', () => {
    const scheduler = newScheduler();
    scheduler.run(({ expectObservable }) => {
      const answers: Array<() => Observable<number>> = [() => throwError(() => new Error('no such stream')), () => of(0), () => of(60_000)];
      const failures: string[] = [];
      const store = { ttl: () => defer(() => (answers.shift() as () => Observable<number>)()) } as unknown as ClaimStore;
      const ttl$ = readClaimsTtl(store, {
        scheduler,
        retryMs: (n) => n * 10,
        onFailure: (e, n) => failures.push(`${n} ${(e as Error).message}`),
      });
      expectObservable(ttl$).toBe('30ms (t|)', { t: 60_000 });
      scheduler.flush();
      expect(failures).toEqual([
        '1 no such stream',
        "2 the claims bucket has no max age: a dead instance's claims would never lapse; give it one (its TTL)",
      ]);
    });
  });

  it('a held error is recognisable', () => {
    expect(new ClaimHeldError('n1')).toBeInstanceOf(Error);
    expect(new ClaimHeldError('n1').message).toBe('n1: held by another provisioner');
  });
});
