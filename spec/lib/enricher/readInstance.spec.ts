import { map } from 'rxjs';
import { FakeIncus } from '../../helpers/FakeIncus';
import { InstanceAnswer, InstanceReadRequest, readInstance } from '../../../lib/enricher/reads/readInstance';
import { newTs } from './harness';
import { IncusApiError } from '../../../lib/incus/api';

const answer = (a: InstanceAnswer): string => {
  const v4 = Object.values(a.state.network ?? {}).flatMap((i) =>
    i.addresses.filter((x) => x.family === 'inet' && x.scope === 'global').map((x) => x.address),
  );
  return `${a.instance.status}/${a.state.status}${v4.length > 0 ? `@${v4.join(',')}` : ''}`;
};
const request = (over: Partial<InstanceReadRequest> = {}): InstanceReadRequest => ({
  project: 'default',
  name: 'c1',
  waitForRunning: false,
  wantInterfaces: true,
  ...over,
});

// Calls take 5 ms: instance then state, so an answer without waiting lands at 10; polls every
// 150 ms from there.

describe('readInstance', () => {
  it('answers at once when there is nothing worth waiting for', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 })
        .createInstance('default', 'c1', { network: 'br0' })
        .start('default', 'c1', '10.0.0.5');
      expectObservable(readInstance(fake, request({ waitForRunning: true }), { scheduler: ts }).pipe(map(answer))).toBe('10ms (a|)', {
        a: 'Running/Running@10.0.0.5',
      });
    });
  });

  it('a stopped instance is not waited on, unless it is a start', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 }).createInstance('default', 'c1', { network: 'br0' });
      expectObservable(readInstance(fake, request(), { scheduler: ts }).pipe(map(answer))).toBe('10ms (a|)', { a: 'Stopped/Stopped' });
    });
  });

  it('a start polls the state until the instance runs with an address, and reads the instance again if it was not running yet', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 })
        .createInstance('default', 'c1', { network: 'br0' })
        .setStatus('default', 'c1', 'Starting');
      ts.schedule(() => fake.start('default', 'c1'), 100);
      ts.schedule(() => fake.lease('default', 'c1', '10.0.0.5'), 400);
      // Polls at 160 (Running, no address), 310, 460 (address): answered at 465, then the instance again: 470.
      expectObservable(readInstance(fake, request({ waitForRunning: true }), { scheduler: ts }).pipe(map(answer))).toBe('470ms (a|)', {
        a: 'Running/Running@10.0.0.5',
      });
      ts.schedule(() => expect([fake.count('getInstance'), fake.count('getInstanceState')]).toEqual([2, 4]), 500);
    });
  });

  it('a start that stops coming up (it failed) answers with what it found', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 })
        .createInstance('default', 'c1', { network: 'br0' })
        .setStatus('default', 'c1', 'Starting');
      ts.schedule(() => fake.stop('default', 'c1'), 100);
      expectObservable(readInstance(fake, request({ waitForRunning: true }), { scheduler: ts }).pipe(map(answer))).toBe('165ms (a|)', {
        a: 'Starting/Stopped',
      });
    });
  });

  it('a running instance without an address is waited on when interfaces are wanted, up to the IP timeout, ignoring poll errors', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 }).createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1');
      let polls = 0;
      fake.failWhen = (call) => (call.method === 'getInstanceState' && ++polls === 2 ? new Error('hiccup') : undefined);
      expectObservable(readInstance(fake, request(), { scheduler: ts, ipTimeout: 1000 }).pipe(map(answer))).toBe('1010ms (a|)', {
        a: 'Running/Running',
      });
      const other = new FakeIncus({ scheduler: ts, latency: 5 }).createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1');
      expectObservable(readInstance(other, request({ wantInterfaces: false }), { scheduler: ts, ipTimeout: 1000 }).pipe(map(answer))).toBe(
        '10ms (a|)',
        { a: 'Running/Running' },
      );
    });
  });

  it('a virtual machine without its agent is never waited on', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 })
        .createInstance('default', 'vm', { network: 'br0', type: 'virtual-machine' })
        .start('default', 'vm');
      expectObservable(readInstance(fake, request({ name: 'vm', waitForRunning: true }), { scheduler: ts }).pipe(map(answer))).toBe(
        '10ms (a|)',
        { a: 'Running/Running' },
      );
    });
  });

  it('the first call failing fails the read; unsubscribing aborts the polling', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 });
      expectObservable(readInstance(fake, request(), { scheduler: ts })).toBe('5ms #', undefined, expect.objectContaining({ status: 404 }));
      const slow = new FakeIncus({ scheduler: ts, latency: 5 }).createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1');
      expectObservable(readInstance(slow, request(), { scheduler: ts }), '^ 200ms !').toBe('');
      ts.schedule(() => expect(slow.inFlight).toBe(0), 300);
    });
  });

  // Incus answers the state of a stopping instance 500 "Invalid PID" while its record still says
  // Running (LXD does not: spec/streams/incus/incusRestClient.lxd.spec.ts). The fake does that
  // until the stop lands at 300 ms.
  const stoppingAt300 = (ts: ReturnType<typeof newTs>): FakeIncus => {
    const fake = new FakeIncus({ scheduler: ts, latency: 5 })
      .createInstance('default', 'c1', { network: 'br0' })
      .start('default', 'c1', '10.0.0.5');
    let stopped = false;
    ts.schedule(() => {
      fake.stop('default', 'c1');
      stopped = true;
    }, 300);
    fake.failWhen = (call) => (call.method === 'getInstanceState' && !stopped ? new IncusApiError("Invalid PID '\ufffd'", 500) : undefined);
    return fake;
  };

  it('a state read answered 500 while the record says Running is a stop under way: both are read again each poll interval, and the stop is the answer', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = stoppingAt300(ts);
      // 500 at 10; again at 160+10 = 170; at 320 the instance (Stopped, 325) and its state (330).
      expectObservable(readInstance(fake, request(), { scheduler: ts, ipTimeout: 10_000 }).pipe(map(answer))).toBe('330ms (a|)', {
        a: 'Stopped/Stopped',
      });
      ts.schedule(() => expect([fake.count('getInstance'), fake.count('getInstanceState')]).toEqual([3, 3]), 400);
    });
  });

  it('within the IP timeout only: a 500 that outlasts it errors the read with that answer', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = stoppingAt300(ts);
      // 500 at 10 and 170; the next try (320) would end past 200 ms.
      expectObservable(readInstance(fake, request(), { scheduler: ts, ipTimeout: 200 })).toBe(
        '170ms #',
        undefined,
        new IncusApiError("Invalid PID '\ufffd'", 500),
      );
    });
  });

  it('a 500 about an instance whose record does not say Running is a failed read, as before', () => {
    const ts = newTs();
    ts.run(({ expectObservable }) => {
      const fake = new FakeIncus({ scheduler: ts, latency: 5 }).createInstance('default', 'c1', { network: 'br0' });
      fake.failWhen = (call) => (call.method === 'getInstanceState' ? new IncusApiError('boom', 500) : undefined);
      expectObservable(readInstance(fake, request(), { scheduler: ts })).toBe('10ms #', undefined, new IncusApiError('boom', 500));
    });
  });

  it('gives its worker back while it waits to read again: onFirstAnswer is told at the first 500, once', () => {
    const ts = newTs();
    ts.run(() => {
      const fake = stoppingAt300(ts);
      const told: number[] = [];
      readInstance(fake, request(), { scheduler: ts, onFirstAnswer: () => told.push(ts.now()) }).subscribe();
      ts.schedule(() => expect(told).toEqual([10]), 500);
    });
  });
});
