import { Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { PauseGate } from '@rxfleet/operators';
import {
  ProvisioningLockError,
  RpcAbortedError,
  RpcConnectionLostError,
  RpcPausedError,
  RpcRetryError,
  RpcStatusError,
  RpcTimeoutError,
  isProvisioningLockError,
} from '../../../lib/choria/errors';
import { FIVE_SEC_BACKOFF_MS, TWENTY_SEC_BACKOFF_MS, backoffDelay, jitter } from '../../../lib/choria/backoff';
import { AttemptRecord, retryRpc } from '../../../lib/choria/retry';
import { Cold, newScheduler } from '../../helpers/marbles';

// random() = 0.5 makes every jittered pause exactly its nominal value, so diagrams can be exact:
// after attempt 1 the pause is 750 ms, after attempt 2 1000 ms, after 3 1500 ms, after 4 2000 ms.
const exact = (): number => 0.5;
const timeout = new RpcTimeoutError('choria_provision#configure', 'n1', 22_000);

describe('the retry wrapper', () => {
  let ts: TestScheduler;
  beforeEach(() => {
    ts = newScheduler();
  });

  it('jitters uniformly in [0.5 m, 1.5 m) and picks the step after the attempt, saturating at 5 s', () => {
    expect(jitter(1000, () => 0)).toBe(500);
    expect(jitter(1000, () => 0.999999)).toBeCloseTo(1499.999, 2);
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(FIVE_SEC_BACKOFF_MS, n, exact))).toEqual([750, 1000, 1500, 2000, 2500]);
    expect(backoffDelay(FIVE_SEC_BACKOFF_MS, 40, exact)).toBe(5000);
    expect(backoffDelay(TWENTY_SEC_BACKOFF_MS, 43, exact)).toBe(20000);
    expect(backoffDelay(TWENTY_SEC_BACKOFF_MS, 99, exact)).toBe(20000);
  });

  it('names the node in the debug line of every try and every failed attempt', () => {
    const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
    const logger = { debug: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }) } as never;
    ts.run(({ cold, expectObservable }) => {
      const attempts = [cold('-#', undefined, timeout), cold('-a|', { a: 'ok' })];
      let n = 0;
      const result = retryRpc(() => attempts[n++], {
        rpc: 'choria_provision#jwt',
        identity: 'n1.example.net',
        tries: 3,
        gate: new PauseGate(),
        scheduler: ts,
        random: exact,
        logger,
      });
      expectObservable(result).toBe('- 752ms (a|)', { a: 'ok' });
    });
    expect(lines.map((l) => l.msg)).toEqual([
      'trying choria_provision#jwt on n1.example.net 1/3',
      'choria_provision#jwt on n1.example.net attempt 1 failed: choria_provision#configure: no reply from n1 within 22s',
      'trying choria_provision#jwt on n1.example.net 2/3',
    ]);
    expect(lines.every((l) => l.fields.identity === 'n1.example.net')).toBe(true);
  });

  it('makes T attempts with a pause between them, none after the last, and fails with the P5 error', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const attempts = [
        cold<string>('10ms #', undefined, timeout),
        cold<string>('10ms #', undefined, timeout),
        cold<string>('10ms #', undefined, timeout),
      ];
      const records: AttemptRecord[] = [];
      const failures: Error[] = [];
      const result = retryRpc(({ attempt }) => attempts[attempt - 1], {
        rpc: 'choria_provision#configure',
        tries: 3,
        random: exact,
        scheduler: ts,
        onAttempt: (r) => records.push(r),
        onFailed: (e) => failures.push(e),
      });
      expectObservable(result).toBe(
        '10ms 750ms 10ms 1000ms 10ms #',
        undefined,
        new RpcRetryError('choria_provision#configure', 3, timeout),
      );
      expectSubscriptions(attempts[0].subscriptions).toBe('^ 9ms !');
      expectSubscriptions(attempts[1].subscriptions).toBe('760ms ^ 9ms !');
      expectSubscriptions(attempts[2].subscriptions).toBe('1770ms ^ 9ms !');
      ts.flush();
      expect(records.map((r) => [r.attempt, r.seconds, r.error])).toEqual([
        [1, 0.01, timeout],
        [2, 0.01, timeout],
        [3, 0.01, timeout],
      ]);
      expect(failures).toHaveLength(1);
      expect(failures[0].message).toBe(
        'choria_provision#configure failed after 3 attempts: choria_provision#configure: no reply from n1 within 22s',
      );
      expect(failures[0].cause).toBe(timeout);
    });
  });

  it('sends an attempt whose reply was lost with the connection again at once, counting it among the tries', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const lost = new RpcConnectionLostError('choria_provision#restart', 'n1');
      const attempts: Cold<string>[] = [cold('30ms #', undefined, lost), cold('10ms #', undefined, timeout), cold('20ms (a|)')];
      const result = retryRpc(({ attempt }) => attempts[attempt - 1], {
        rpc: 'choria_provision#restart',
        tries: 3,
        random: exact,
        scheduler: ts,
      });
      // No pause after the lost attempt; the usual 1000 ms pause after the second.
      expectObservable(result).toBe('30ms 10ms 1000ms 20ms (a|)');
      expectSubscriptions(attempts[1].subscriptions).toBe('30ms ^ 9ms !');
      expectSubscriptions(attempts[2].subscriptions).toBe('1040ms ^ 19ms !');
    });
  });

  it('does not send a lost attempt again past its tries', () => {
    ts.run(({ cold, expectObservable }) => {
      const lost = new RpcConnectionLostError('choria_provision#gencsr', 'n1');
      const result = retryRpc(() => cold<string>('30ms #', undefined, lost), {
        rpc: 'choria_provision#gencsr',
        tries: 1,
        random: exact,
        scheduler: ts,
      });
      expectObservable(result).toBe('30ms #', undefined, new RpcRetryError('choria_provision#gencsr', 1, lost));
    });
  });

  it('delivers the value of the first attempt that succeeds, and records each attempt', () => {
    ts.run(({ cold, expectObservable }) => {
      const attempts: Cold<string>[] = [cold('5ms #', undefined, timeout), cold('20ms (a|)')];
      const records: AttemptRecord[] = [];
      const failures: Error[] = [];
      const result = retryRpc(({ attempt }) => attempts[attempt - 1], {
        rpc: 'rpcutil#inventory',
        tries: 5,
        random: exact,
        scheduler: ts,
        onAttempt: (r) => records.push(r),
        onFailed: (e) => failures.push(e),
      });
      expectObservable(result).toBe('5ms 750ms 20ms (a|)');
      ts.flush();
      expect(records.map((r) => [r.attempt, r.seconds, 'error' in r])).toEqual([
        [1, 0.005, true],
        [2, 0.02, false],
      ]);
      expect(failures).toEqual([]);
    });
  });

  it("delivers only a successful attempt's values: a value from an attempt that then fails is dropped", () => {
    ts.run(({ cold, expectObservable }) => {
      const attempts: Cold<string>[] = [cold('a 4ms #', undefined, timeout), cold('b|')];
      expectObservable(retryRpc(({ attempt }) => attempts[attempt - 1], { rpc: 'x#y', tries: 2, random: exact, scheduler: ts })).toBe(
        '756ms (b|)',
      ); // delivered on completion, a frame after b;
    });
  });

  it('with one try, fails after that attempt without any pause (gencsr)', () => {
    ts.run(({ cold, expectObservable }) => {
      const only = cold<string>('30ms #', undefined, timeout);
      expectObservable(retryRpc(() => only, { rpc: 'choria_provision#gencsr', tries: 1, random: exact, scheduler: ts })).toBe(
        '30ms #',
        undefined,
        new RpcRetryError('choria_provision#gencsr', 1, timeout),
      );
    });
  });

  it('does not retry a provisioning-lock refusal (P10), and says so through the cause', () => {
    const refusal = new ProvisioningLockError('choria_provision#jwt', 'n1', 1, 'Could not obtain provisioning lock');
    let failure: unknown;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold<string>('10ms #', undefined, refusal);
      const second = cold<string>('a|');
      const result = retryRpc(({ attempt }) => (attempt === 1 ? first : second), {
        rpc: 'choria_provision#jwt',
        tries: 3,
        random: exact,
        scheduler: ts,
        onFailed: (e) => (failure = e),
      });
      expectObservable(result).toBe('10ms #', undefined, new RpcRetryError('choria_provision#jwt', 1, refusal));
      expectSubscriptions(second.subscriptions).toBe([]);
    });
    expect(isProvisioningLockError(failure)).toBe(true);
    expect(isProvisioningLockError(new RpcRetryError('x', 3, new RpcStatusError('x', 'n1', 1, 'Incorrect provision token supplied')))).toBe(
      false,
    );
  });

  it('retries other status errors, as go-choria does', () => {
    const refused = new RpcStatusError('choria_provision#configure', 'n1', 1, 'Incorrect provision token supplied');
    ts.run(({ cold, expectObservable }) => {
      const attempts = [cold<string>('#', undefined, refused), cold<string>('#', undefined, refused)];
      expectObservable(
        retryRpc(({ attempt }) => attempts[attempt - 1], { rpc: 'choria_provision#configure', tries: 2, random: exact, scheduler: ts }),
      ).toBe('750ms #', undefined, new RpcRetryError('choria_provision#configure', 2, refused));
    });
  });

  it('refuses to start while paused, without attempting', () => {
    const gate = new PauseGate(true);
    let made = 0;
    const failures: Error[] = [];
    ts.run(({ expectObservable }) => {
      const result = retryRpc(
        () => {
          made++;
          return new Observable<string>();
        },
        { rpc: 'choria_provision#jwt', tries: 3, gate, scheduler: ts, onFailed: (e) => failures.push(e) },
      );
      expectObservable(result).toBe('#', undefined, new RpcPausedError('choria_provision#jwt'));
    });
    expect(made).toBe(0);
    expect(failures[0].message).toBe('provisioning is paused, cannot perform choria_provision#jwt');
  });

  it('a pause during an attempt ends the call at once, unsubscribing the attempt and aborting its signal', () => {
    const gate = new PauseGate();
    const signals: AbortSignal[] = [];
    const records: AttemptRecord[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold<string>('1000ms a|');
      const result = retryRpc(
        ({ signal }) => {
          signals.push(signal);
          return slow;
        },
        { rpc: 'choria_provision#configure', tries: 5, gate, scheduler: ts, random: exact, onAttempt: (r) => records.push(r) },
      );
      ts.schedule(() => gate.pause(), 300);
      expectObservable(result).toBe('300ms #', undefined, new RpcPausedError('choria_provision#configure'));
      expectSubscriptions(slow.subscriptions).toBe('^ 299ms !');
    });
    expect(signals[0].aborted).toBe(true);
    expect(signals[0].reason).toBeInstanceOf(RpcPausedError);
    expect(records.map((r) => [r.attempt, r.seconds, r.error instanceof RpcPausedError])).toEqual([[1, 0.3, true]]);
  });

  it('a pause during the wait between attempts ends the call at once, with no further attempt', () => {
    const gate = new PauseGate();
    let made = 0;
    ts.run(({ cold, expectObservable }) => {
      const failing = cold<string>('10ms #', undefined, timeout);
      const result = retryRpc(
        () => {
          made++;
          return failing;
        },
        { rpc: 'choria_provision#configure', tries: 5, gate, scheduler: ts, random: exact },
      );
      ts.schedule(() => gate.pause(), 400);
      expectObservable(result).toBe('400ms #', undefined, new RpcPausedError('choria_provision#configure'));
    });
    expect(made).toBe(1);
  });

  it('an attempt that reacts to its aborted signal does not turn the pause into another error', () => {
    const gate = new PauseGate();
    ts.run(({ expectObservable }) => {
      // An attempt like the RPC client's: it errors as soon as its signal aborts.
      const reactive = ({ signal }: { signal: AbortSignal }): Observable<string> =>
        new Observable<string>((s) => {
          const onAbort = (): void => s.error(new RpcAbortedError('x#y', signal.reason));
          signal.addEventListener('abort', onAbort);
          return () => signal.removeEventListener('abort', onAbort);
        });
      ts.schedule(() => gate.pause(), 50);
      expectObservable(retryRpc(reactive, { rpc: 'x#y', tries: 3, gate, scheduler: ts })).toBe(
        '50ms #',
        undefined,
        new RpcPausedError('x#y'),
      );
    });
  });

  it('shutdown aborts an attempt or a wait at once and is not retried', () => {
    const shutdown = new AbortController();
    ts.run(({ cold, expectObservable }) => {
      const failing = cold<string>('10ms #', undefined, timeout);
      ts.schedule(() => shutdown.abort(new Error('SIGTERM')), 200);
      expectObservable(retryRpc(() => failing, { rpc: 'x#y', tries: 5, signal: shutdown.signal, scheduler: ts, random: exact })).toBe(
        '200ms #',
        undefined,
        new RpcAbortedError('x#y', new Error('SIGTERM')),
      );
    });
  });

  it('resuming the gate later does not revive a call that ended paused', () => {
    const gate = new PauseGate();
    const seen: string[] = [];
    ts.run(({ cold }) => {
      const failing = cold<string>('10ms #', undefined, timeout);
      retryRpc(() => failing, { rpc: 'x#y', tries: 5, gate, scheduler: ts, random: exact }).subscribe({
        next: (v) => seen.push(v),
        error: (e: Error) => seen.push(e.name),
      });
      ts.schedule(() => gate.pause(), 100);
      ts.schedule(() => gate.resume(), 200);
    });
    expect(seen).toEqual(['RpcPausedError']);
  });

  it('unsubscribing cancels the attempt in flight and the pending pause', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold<string>('10ms #', undefined, timeout);
      const second = cold<string>('a|');
      const result = retryRpc(({ attempt }) => (attempt === 1 ? first : second), { rpc: 'x#y', tries: 2, scheduler: ts, random: exact });
      expectObservable(result, '^ 99ms !').toBe('');
      expectSubscriptions(first.subscriptions).toBe('^ 9ms !');
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('turns an attempt function that throws into a failed attempt', () => {
    const boom = new Error('cannot encode');
    ts.run(({ expectObservable }) => {
      expectObservable(
        retryRpc<string>(
          () => {
            throw boom;
          },
          { rpc: 'x#y', tries: 2, scheduler: ts, random: exact },
        ),
      ).toBe('750ms #', undefined, new RpcRetryError('x#y', 2, boom));
    });
  });
});
