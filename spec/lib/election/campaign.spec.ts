import { Observable, defer, of, throwError } from 'rxjs';
import { CampaignState, ElectionEvent, campaign } from '../../../lib/election/campaign';
import { ElectionStore } from '../../../lib/election/ElectionStore';
import { TWENTY_SEC_BACKOFF_MS, backoffDelay } from '../../../lib/choria/backoff';
import { newScheduler } from '../../helpers/marbles';

/**
 * A bucket in memory with the compare-and-swap rules of a JetStream KV key: create only when
 * empty, update only from the last sequence. Answers synchronously, so virtual time decides.
 */
class FakeBucket {
  holder: string | undefined;
  sequence = 0;
  ttlMs = 8000;
  ttlFailures = 0;
  calls: string[] = [];
  down = false;

  store(): ElectionStore {
    const answer = <T>(fn: () => T): Observable<T> => defer(() => (this.down ? throwError(() => new Error('no responders')) : of(fn())));
    return {
      ttl: () => {
        this.calls.push('ttl');
        if (this.ttlFailures > 0) {
          this.ttlFailures--;
          return throwError(() => new Error('stream not found'));
        }
        return answer(() => this.ttlMs);
      },
      create: (value) => {
        this.calls.push(`create ${value}`);
        return answer(() => {
          if (this.holder !== undefined) throw new Error('wrong last sequence');
          this.holder = value;
          return ++this.sequence;
        });
      },
      update: (value, last) => {
        this.calls.push(`update ${value}@${last}`);
        return answer(() => {
          if (last !== this.sequence) throw new Error('wrong last sequence');
          this.holder = value;
          return ++this.sequence;
        });
      },
    };
  }
}

// random() = 0.5 makes every jittered delay its nominal value, and the start splay 2.5 s.
const half = (): number => 0.5;

describe('campaign (Choria Streams election)', () => {
  it('wins: TTL read, start splay, create, one confirming refresh, 200 ms, then refreshes every ~0.5 s', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    scheduler.run(({ expectObservable }) => {
      const won = campaign({ identity: 'rx1', store: bucket.store(), scheduler, random: half });
      // create at 2500, update at 3000, won at 3200, then updates at 3700, 4200...
      expectObservable(won, '5000ms !').toBe('3200ms w', { w: 'won' });
    });
    expect(bucket.calls.slice(0, 5)).toEqual(['ttl', 'create rx1', 'update rx1@1', 'update rx1@2', 'update rx1@3']);
    expect(bucket.holder).toBe('rx1');
  });

  it('stays a candidate while another identity (a Go provisioner, say) holds the key, then wins once it is free', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    bucket.holder = 'go-provisioner';
    bucket.sequence = 7;
    scheduler.run(({ expectObservable }) => {
      scheduler.schedule(() => {
        bucket.holder = undefined; // the Go leader died; its key expired
      }, 20_000);
      expectObservable(campaign({ identity: 'rx1', store: bucket.store(), scheduler, random: half }), '30000ms !').toBe('22450ms w', {
        w: 'won',
      });
    });
    // Creates at 2.5 s, then after 0.75, 1, 1.5, 2 s, then every 2 s (a quarter of the 8 s TTL):
    // the one at 21.75 s succeeds, its refresh at 22.25 s confirms it, and 200 ms later it is won.
    expect(bucket.calls.filter((c) => c.startsWith('create'))).toHaveLength(12);
  });

  it('a candidate never waits longer than a quarter of the TTL between attempts (P14), or the configured cap', () => {
    for (const [cap, expected] of [
      [undefined, 2000],
      [1500, 1500],
    ] as const) {
      const scheduler = newScheduler();
      const bucket = new FakeBucket();
      bucket.holder = 'someone-else';
      const intervals: number[] = [];
      scheduler.run(() => {
        const sub = campaign({
          identity: 'rx1',
          store: bucket.store(),
          scheduler,
          random: half,
          maxCandidateIntervalMs: cap,
          hooks: { onInterval: (ms) => intervals.push(ms) },
        }).subscribe();
        scheduler.schedule(() => sub.unsubscribe(), 60_000);
      });
      // After the n-th failed create the wait is the table's n-th value, capped.
      const nominal = intervals.map((_, i) => Math.min(backoffDelay(TWENTY_SEC_BACKOFF_MS, i + 1, half), expected));
      expect(intervals).toEqual(nominal);
      expect(intervals.slice(0, 4)).toEqual([750, 1000, 1500, Math.min(2000, expected)]);
      expect(Math.max(...intervals)).toBe(expected);
    }
  });

  it('a failed refresh emits lost and makes it a candidate again, which wins again once the key is free', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    const leader: boolean[] = [];
    scheduler.run(({ expectObservable }) => {
      scheduler.schedule(() => {
        bucket.holder = 'intruder'; // someone else wrote the key: our last sequence is stale
        bucket.sequence += 1;
      }, 4000);
      scheduler.schedule(() => (bucket.holder = undefined), 6000);
      const events = campaign({
        identity: 'rx1',
        store: bucket.store(),
        scheduler,
        random: half,
        hooks: { onLeader: (l) => leader.push(l) },
      });
      // won at 3200; refresh at 3700 ok; at 4200 it fails: lost; creates at 4700 and 5450 fail, at
      // 6450 succeed; the refresh at 6950 confirms, won at 7150.
      expectObservable(events, '9000ms !').toBe('3200ms w 999ms l 2949ms w', { w: 'won', l: 'lost' });
    });
    expect(leader).toEqual([true, false, true]);
  });

  it('counts every tick by state', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    const ticks: CampaignState[] = [];
    scheduler.run(() => {
      const sub = campaign({
        identity: 'rx1',
        store: bucket.store(),
        scheduler,
        random: half,
        hooks: { onCampaign: (s) => ticks.push(s) },
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 4300);
    });
    // create at 2500 (candidate), updates at 3000, 3700, 4200 (leader).
    expect(ticks).toEqual(['candidate', 'leader', 'leader', 'leader']);
  });

  it('retries a failing set-up for ever, reporting each failure (P8), and campaigns once the bucket answers', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    bucket.ttlFailures = 3;
    const failures: number[] = [];
    scheduler.run(({ expectObservable }) => {
      const events = campaign({
        identity: 'rx1',
        store: bucket.store(),
        scheduler,
        random: half,
        hooks: { onSetupFailure: (_e, n) => failures.push(n) },
      });
      // set-up retried after 1, 2, 4 s: TTL read at 7000; splay 2500; won at 7000 + 3200.
      expectObservable(events, '12000ms !').toBe('10200ms w', { w: 'won' });
    });
    expect(failures).toEqual([1, 2, 3]);
  });

  it('refuses a TTL outside 1 s to 1 h as a set-up failure, and keeps retrying', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    bucket.ttlMs = 0;
    const failures: string[] = [];
    scheduler.run(() => {
      const sub = campaign({
        identity: 'rx1',
        store: bucket.store(),
        scheduler,
        random: half,
        hooks: { onSetupFailure: (e) => failures.push((e as Error).message) },
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 3500);
    });
    // Attempts at 0, 1 and 3 s (retries after 1 s, then 2 s).
    expect(failures).toEqual(Array(3).fill('election bucket TTL must be between 1 s and 1 h, it is 0 ms'));
    expect(bucket.calls.filter((c) => c.startsWith('create'))).toEqual([]);
  });

  it('stopping emits nothing more, touches the store no more, and does not delete the key', () => {
    const scheduler = newScheduler();
    const bucket = new FakeBucket();
    const events: ElectionEvent[] = [];
    let callsAtStop = 0;
    scheduler.run(() => {
      const sub = campaign({ identity: 'rx1', store: bucket.store(), scheduler, random: half }).subscribe((e) => events.push(e));
      scheduler.schedule(() => {
        sub.unsubscribe();
        callsAtStop = bucket.calls.length;
      }, 3500);
    });
    expect(events).toEqual(['won']);
    expect(bucket.calls.length).toBe(callsAtStop);
    expect(bucket.holder).toBe('rx1');
  });
});
