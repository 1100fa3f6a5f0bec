import { filter, finalize, of, tap } from 'rxjs';
import { PerKeyReader, ReadResult, SlotPool } from '@rxfleet/operators';
import { Cold, newScheduler } from '../helpers/marbles';

// A request is '<key><tag>' ('a1', 'a!'); '!' marks a request that needs more than a plain read.
const keyOf = (request: string): string => request[0];
const needsMore = (next: string, running: string): boolean => next.endsWith('!') && !running.endsWith('!');

const summary = (r: ReadResult<string, string, string>): string =>
  `${r.key}:${r.requests.join(',')}:${r.status}${r.status === 'answered' ? `:${r.value}` : ''}`;

/** Results as `frame summary`, and a way to ask at a frame. */
function recorder(scheduler: ReturnType<typeof newScheduler>): { landed: string[]; at: (frame: number, work: () => void) => void } {
  const landed: string[] = [];
  return { landed, at: (frame, work) => scheduler.schedule(work, frame) };
}

describe('PerKeyReader', () => {
  it('a request for a key being read joins it; every request lands with the one answer; other keys read on their own', () => {
    const scheduler = newScheduler();
    const { landed, at } = recorder(scheduler);
    scheduler.run(({ cold, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = { a1: cold('---r|', { r: 'A' }), b1: cold('-r|', { r: 'B' }) };
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => reads[lead],
        onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
      });
      at(0, () => keyed.request('a1'));
      at(1, () => keyed.request('a2'));
      at(2, () => keyed.request('b1'));
      at(2, () => expect([keyed.size, keyed.has('a'), keyed.has('c')]).toEqual([2, true, false]));
      expectSubscriptions(reads.a1.subscriptions).toBe('^--!');
      expectSubscriptions(reads.b1.subscriptions).toBe('--^!');
    });
    expect(landed).toEqual(['3 a:a1,a2:answered:A', '3 b:b1:answered:B']);
  });

  it('a stronger request aborts the running read and supersedes it, taking its requests along first; the aborted answer never lands', () => {
    const scheduler = newScheduler();
    const { landed, at } = recorder(scheduler);
    scheduler.run(({ cold, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = { a1: cold('-----r', { r: 'OLD' }), 'a!': cold('---r', { r: 'NEW' }) };
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => reads[lead],
        supersedes: needsMore,
        onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
      });
      at(0, () => keyed.request('a1'));
      at(1, () => keyed.request('a2'));
      at(3, () => keyed.request('a!'));
      at(4, () => keyed.request('a3'));
      expectSubscriptions(reads.a1.subscriptions).toBe('^--!');
      expectSubscriptions(reads['a!'].subscriptions).toBe('---^--!');
    });
    expect(landed).toEqual(['6 a:a1,a2,a!,a3:answered:NEW']);
  });

  it("with slots, reads wait their turn and are joined while they wait; a fresh request that comes once its key's read has started is read again, with every other latecomer, when that read has answered", () => {
    const scheduler = newScheduler();
    const { landed, at } = recorder(scheduler);
    const starts: string[] = [];
    scheduler.run(({ cold, expectSubscriptions }) => {
      const hog = cold('--r', { r: 'B' });
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => {
          starts.push(`${scheduler.now()} ${lead}`);
          return lead === 'b1' ? hog : cold('---r', { r: lead.toUpperCase() });
        },
        slots: new SlotPool(1),
        fresh: () => true,
        onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
      });
      at(0, () => keyed.request('b1')); // takes the one slot until 2
      at(0, () => keyed.request('a1')); // waits for it
      at(1, () => keyed.request('a2')); // a1's read has not started: joins
      at(3, () => keyed.request('a3')); // it has (at 2): waits for the next
      at(4, () => keyed.request('a4'));
      expectSubscriptions(hog.subscriptions).toBe('^-!');
    });
    expect(starts).toEqual(['0 b1', '2 a1', '5 a3']);
    expect(landed).toEqual(['2 b:b1:answered:B', '5 a:a1,a2:answered:A1', '8 a:a3,a4:answered:A3']);
  });

  it('a read holds its slot until it answers, or until it gives it back; a read superseded or cancelled while it waits leaves the line', () => {
    const scheduler = newScheduler();
    const { landed, at } = recorder(scheduler);
    const starts: string[] = [];
    scheduler.run(({ cold }) => {
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead, giveBack) => {
          starts.push(`${scheduler.now()} ${lead}`);
          // a1 gives its slot back after 1 ms and answers at 4; the others hold it for 2 ms.
          if (lead === 'a1')
            return cold('-x--r', { x: 'x', r: 'A' }).pipe(
              tap((v) => v === 'x' && giveBack()),
              filter((v) => v !== 'x'),
            );
          return cold('--r', { r: lead.toUpperCase() });
        },
        slots: new SlotPool(1),
        supersedes: needsMore,
        onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
      });
      at(0, () => keyed.request('a1'));
      at(0, () => keyed.request('b1')); // waits for a1's slot: 1
      at(0, () => keyed.request('c1')); // waits behind b1, then cancelled: never runs
      at(0, () => keyed.request('d1'));
      at(0, () => keyed.request('d!')); // supersedes d1 while it waits: d! goes to the back
      at(0, () => keyed.cancel('c'));
    });
    expect(starts).toEqual(['0 a1', '1 b1', '3 d!']);
    expect(landed).toEqual(['0 c:c1:cancelled', '3 b:b1:answered:B1', '4 a:a1:answered:A', '5 d:d1,d!:answered:D!']);
  });

  it('a failure is shared by the latecomers; a request that is not fresh joins a read that has begun', () => {
    const scheduler = newScheduler();
    const { landed, at } = recorder(scheduler);
    scheduler.run(({ cold }) => {
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => (lead === 'a1' ? cold<string>('--#', undefined, new Error('busy')) : cold('--r', { r: 'B' })),
        fresh: (request) => request[0] === 'a',
        onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
      });
      at(0, () => keyed.request('a1'));
      at(1, () => keyed.request('a2'));
      at(0, () => keyed.request('b1'));
      at(1, () => keyed.request('b2'));
    });
    expect(landed).toEqual(['2 a:a1,a2:failed', '2 b:b1,b2:answered:B']);
  });

  it('a cancelled key hands back every request as cancelled and aborts its read; cancelling an idle key does nothing', () => {
    const scheduler = newScheduler();
    const { landed, at } = recorder(scheduler);
    scheduler.run(({ cold, expectSubscriptions }) => {
      const read = cold('-----r', { r: 'A' });
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: () => read,
        onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
      });
      at(0, () => keyed.request('a1'));
      at(1, () => keyed.request('a2'));
      at(2, () => expect(keyed.cancel('b')).toBe(false));
      at(3, () => expect(keyed.cancel('a')).toBe(true));
      expectSubscriptions(read.subscriptions).toBe('^--!');
    });
    expect(landed).toEqual(['3 a:a1,a2:cancelled']);
  });

  it('a read that throws, errors or completes empty fails its requests; an answer during subscribe lands once and unsubscribes the read', () => {
    const landed: string[] = [];
    let unsubscribed = 0;
    const keyed = new PerKeyReader<string, string, string>({
      key: keyOf,
      read: (lead) => {
        if (lead === 'a1') throw new Error('no reader');
        if (lead === 'b1') return [];
        return of('C', 'C again').pipe(finalize(() => unsubscribed++));
      },
      onLanded: (r) => landed.push(summary(r)),
    });
    keyed.request('a1');
    keyed.request('b1');
    keyed.request('c1');
    expect(landed).toEqual(['a:a1:failed', 'b:b1:failed', 'c:c1:answered:C']);
    expect(unsubscribed).toBe(1);
    expect(keyed.size).toBe(0);
  });

  it('a landing may ask for more reads; a throwing key selector throws out of request; dispose aborts everything silently', () => {
    const scheduler = newScheduler();
    const landed: string[] = [];
    scheduler.run(({ cold, expectSubscriptions }) => {
      const first = cold('-r', { r: 'A' });
      const second = cold('--r', { r: 'B' });
      const keyed: PerKeyReader<string, string, string> = new PerKeyReader<string, string, string>({
        key: (request) => {
          if (request === 'boom') throw new Error('bad key');
          return keyOf(request);
        },
        read: (lead) => (lead === 'a1' ? first : second),
        onLanded: (r) => {
          landed.push(`${scheduler.now()} ${summary(r)}`);
          if (r.requests.includes('a1')) keyed.request('a2');
        },
      });
      scheduler.schedule(() => keyed.request('a1'), 0);
      scheduler.schedule(() => expect(() => keyed.request('boom')).toThrow('bad key'), 0);
      scheduler.schedule(() => keyed.dispose(), 2);
      scheduler.schedule(() => keyed.request('a3'), 3);
      expectSubscriptions(first.subscriptions).toBe('^!');
      expectSubscriptions(second.subscriptions).toBe('-^!');
    });
    expect(landed).toEqual(['1 a:a1:answered:A']);
  });
});
