import { map } from 'rxjs';
import { AdmissionLedger, LedgerSizes, RefusalReason, Ticket } from '@rxfleet/operators';
import { admit } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';

// Values are 'key' or 'key:tag' so that two sightings of one key can be told apart.
const keyOf = (value: string): string => value.split(':')[0];
const sightings = { a: 'a', b: 'b', c: 'c', x: 'a:1', y: 'a:2', z: 'a:3' };

function ledgerFor(scheduler: ReturnType<typeof newScheduler>, window: number, capacity: number): AdmissionLedger<string, string> {
  return new AdmissionLedger({ key: keyOf, window, capacity, scheduler });
}

describe('admit', () => {
  it('admits a new key and refuses the same key while its sighting is younger than the window', () => {
    const scheduler = newScheduler();
    const refusals: Array<[number, string, RefusalReason]> = [];
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const ledger = ledgerFor(scheduler, 10, 100);
      const source = cold('a-b-a-b-|');
      const result = source.pipe(
        admit(ledger, { onRefuse: (r) => refusals.push([scheduler.now(), r.value, r.reason]) }),
        map((t) => t.value),
      );
      expectObservable(result).toBe('a-b-----|');
      expectSubscriptions(source.subscriptions).toBe('^-------!');
    });
    expect(refusals).toEqual([
      [4, 'a', 'held'],
      [6, 'b', 'held'],
    ]);
  });

  it('supersedes a held sighting once it is older than the window; the old ticket goes stale', () => {
    const scheduler = newScheduler();
    const tickets: Ticket<string, string>[] = [];
    const refused: string[] = [];
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler, 5, 100);
      // y comes exactly one window after x: it supersedes x. z is one frame after y: too young.
      const source = cold('x 4ms yz|', sightings);
      const result = source.pipe(
        admit(ledger, { onRefuse: (r) => refused.push(r.value) }),
        map((t) => {
          tickets.push(t);
          return t.value;
        }),
      );
      expectObservable(result).toBe('x 4ms y-|', sightings);
    });
    expect(refused).toEqual(['a:3']);
    expect(tickets[0].state).toBe('stale');
    expect(tickets[0].isCurrent()).toBe(false);
    expect(tickets[1].isCurrent()).toBe(true);
  });

  it('a stale ticket is not started, and its free() cannot free the key of the ticket that superseded it', () => {
    const scheduler = newScheduler();
    scheduler.run(() => {
      const ledger = ledgerFor(scheduler, 5, 100);
      const first = ledger.offer('a:1');
      if (!first.admitted) throw new Error('first offer refused');
      scheduler.schedule(() => {
        const second = ledger.offer('a:2');
        expect(second.admitted && second.superseded).toBe(first.ticket);
        expect(first.ticket.start()).toBe(false);
        first.ticket.free();
        expect(ledger.holder('a')?.value).toBe('a:2');
        expect(ledger.queued).toBe(1);
      }, 5);
    });
  });

  it('a ticket holding its key after its work is not superseded by age; a running one is', () => {
    const scheduler = newScheduler();
    scheduler.run(() => {
      const ledger = ledgerFor(scheduler, 5, 100);
      const done = ledger.offer('a:1');
      const running = ledger.offer('b:1');
      if (!done.admitted || !running.admitted) throw new Error('first offers refused');
      done.ticket.start();
      done.ticket.hold();
      running.ticket.start();
      expect(done.ticket.state).toBe('holding');
      expect(done.ticket.isCurrent()).toBe(true);
      scheduler.schedule(() => {
        const again = ledger.offer('a:2');
        expect(again.admitted === false && again.reason).toBe('held');
        const next = ledger.offer('b:2');
        expect(next.admitted && next.superseded).toBe(running.ticket);
        done.ticket.free();
        expect(ledger.offer('a:3').admitted).toBe(true);
      }, 50);
    });
  });

  it('a running ticket is judged by how long it has run: a long wait in the queue does not make it superseded', () => {
    const scheduler = newScheduler();
    scheduler.run(() => {
      const ledger = ledgerFor(scheduler, 5, 100);
      const first = ledger.offer('a:1');
      if (!first.admitted) throw new Error('first offer refused');
      // Queued for 20 frames (a backlog), then started: re-sighted 3 frames into its work, it is held.
      scheduler.schedule(() => {
        first.ticket.start();
        expect(first.ticket.startedAt).toBe(20);
      }, 20);
      scheduler.schedule(() => {
        const again = ledger.offer('a:2');
        expect(again.admitted === false && again.reason).toBe('held');
      }, 23);
      // Running for a whole window since its start, it may be stuck: the next sighting supersedes it.
      scheduler.schedule(() => {
        const next = ledger.offer('a:3');
        expect(next.admitted && next.superseded).toBe(first.ticket);
        expect(first.ticket.isCurrent()).toBe(false);
      }, 25);
    });
  });

  it('hold() changes only a started ticket', () => {
    const scheduler = newScheduler();
    const ledger = ledgerFor(scheduler, 5, 100);
    const offer = ledger.offer('a');
    if (!offer.admitted) throw new Error('refused');
    offer.ticket.hold();
    expect(offer.ticket.state).toBe('queued');
  });

  it('a full queue refuses and forgets the key; starting a ticket makes room', () => {
    const scheduler = newScheduler();
    const refusals: Array<[string, RefusalReason]> = [];
    let ledger!: AdmissionLedger<string, string>;
    scheduler.run(({ cold, expectObservable }) => {
      ledger = ledgerFor(scheduler, 1000, 2);
      const source = cold('abc|');
      const result = source.pipe(
        admit(ledger, { onRefuse: (r) => refusals.push([r.value, r.reason]) }),
        map((t) => t.value),
      );
      expectObservable(result).toBe('ab-|');
    });
    expect(refusals).toEqual([['c', 'full']]);
    expect(ledger.holder('c')).toBeUndefined();
    expect({ held: ledger.held, queued: ledger.queued }).toEqual({ held: 2, queued: 2 });
    ledger.holder('a')?.start();
    expect(ledger.queued).toBe(1);
    expect(ledger.offer('c').admitted).toBe(true);
  });

  it('a sighting that supersedes an old one when the queue is full forgets the key altogether', () => {
    const scheduler = newScheduler();
    scheduler.run(() => {
      const ledger = ledgerFor(scheduler, 5, 1);
      const first = ledger.offer('a:1');
      if (!first.admitted) throw new Error('first offer refused');
      first.ticket.start(); // running: the queue has room for one
      ledger.offer('b');
      scheduler.schedule(() => {
        const again = ledger.offer('a:2');
        expect(again).toMatchObject({ admitted: false, reason: 'full' });
        expect(first.ticket.isCurrent()).toBe(false);
        expect(ledger.holder('a')).toBeUndefined();
        expect(ledger.held).toBe(1);
      }, 10);
    });
  });

  it('a reset notifier clears the ledger and makes every outstanding ticket stale', () => {
    const scheduler = newScheduler();
    const tickets: Ticket<string, string>[] = [];
    let ledger!: AdmissionLedger<string, string>;
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      ledger = ledgerFor(scheduler, 1000, 100);
      const source = cold('ab--a-|');
      const reset = hot('  ---r---');
      const result = source.pipe(
        admit(ledger, { reset }),
        map((t) => {
          tickets.push(t);
          return t.value;
        }),
      );
      // After the reset, 'a' is unknown again and is admitted at once.
      expectObservable(result).toBe('ab--a-|');
      expectSubscriptions(source.subscriptions).toBe('^-----!');
      expectSubscriptions(reset.subscriptions).toBe(' ^-----!');
    });
    expect(tickets.map((t) => t.state)).toEqual(['stale', 'stale', 'queued']);
    expect({ held: ledger.held, queued: ledger.queued }).toEqual({ held: 1, queued: 1 });
  });

  it('a reset also makes a started ticket stale, so its worker finds it no longer current', () => {
    const scheduler = newScheduler();
    const ledger = ledgerFor(scheduler, 1000, 100);
    const offer = ledger.offer('a');
    if (!offer.admitted) throw new Error('refused');
    offer.ticket.start();
    ledger.reset();
    expect(offer.ticket.isCurrent()).toBe(false);
    expect(ledger.offer('a').admitted).toBe(true);
  });

  it('sizes$ replays the current sizes and follows every change', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler, 1000, 100);
      const seen: LedgerSizes[] = [];
      ledger.sizes$.subscribe((s) => seen.push(s));
      const source = cold('ab|');
      expectObservable(source.pipe(admit(ledger))).toBe('ab|', { a: expect.anything(), b: expect.anything() });
      scheduler.schedule(() => {
        ledger.holder('a')?.start();
        ledger.holder('a')?.free();
        ledger.holder('b')?.free();
        expect(seen).toEqual([
          { held: 0, queued: 0 },
          { held: 1, queued: 1 },
          { held: 2, queued: 2 },
          { held: 2, queued: 1 },
          { held: 1, queued: 1 },
          { held: 0, queued: 0 },
        ]);
      }, 5);
    });
  });

  it('refuses a bad window or capacity at construction', () => {
    expect(() => new AdmissionLedger({ key: keyOf, window: -1, capacity: 1 })).toThrow(RangeError);
    expect(() => new AdmissionLedger({ key: keyOf, window: 1, capacity: Number.NaN })).toThrow(RangeError);
  });

  it('errors when the reset notifier errors, and unsubscribes the source', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const ledger = ledgerFor(scheduler, 1000, 100);
      const source = cold('a---b|');
      const reset = hot(' --#');
      expectObservable(
        source.pipe(
          admit(ledger, { reset }),
          map((t) => t.value),
        ),
      ).toBe('a-#');
      expectSubscriptions(source.subscriptions).toBe('^-!');
      expectSubscriptions(reset.subscriptions).toBe('^-!');
    });
  });

  it('passes a source error on and unsubscribes the reset notifier', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const ledger = ledgerFor(scheduler, 1000, 100);
      const source = cold('a-#');
      const reset = hot(' -----');
      expectObservable(
        source.pipe(
          admit(ledger, { reset }),
          map((t) => t.value),
        ),
      ).toBe('a-#');
      expectSubscriptions(reset.subscriptions).toBe('^-!');
    });
  });

  it('unsubscribing unsubscribes the source and the reset notifier', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const ledger = ledgerFor(scheduler, 1000, 100);
      const source = cold('a---b---|');
      const reset = hot(' --------');
      expectObservable(
        source.pipe(
          admit(ledger, { reset }),
          map((t) => t.value),
        ),
        '---!',
      ).toBe('a---');
      expectSubscriptions(source.subscriptions).toBe('^--!');
      expectSubscriptions(reset.subscriptions).toBe('^--!');
    });
  });
});
