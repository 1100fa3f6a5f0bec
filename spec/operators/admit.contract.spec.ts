import fc from 'fast-check';
import { Subject, map } from 'rxjs';
import { AdmissionLedger, Refusal, Ticket, admit } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// Values are 'key' or 'key:tag', so that two sightings of one key can be told apart.
const keyOf = (value: string): string => value.split(':')[0];

describe('admit: the rxjs contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    const refused: Array<[number, string]> = [];
    const tickets: Ticket<string>[] = [];
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const ledger = new AdmissionLedger({ key: keyOf, window: 5, capacity: 10, scheduler });
      const source = cold('aba----a-|');
      const result = source.pipe(
        admit(ledger, { onRefuse: (r) => refused.push([scheduler.now(), r.reason]) }),
        map((t) => {
          tickets.push(t);
          return t.value;
        }),
      );
      expectObservable(result).toBe('xy-----z-|', { x: 'a', y: 'b', z: 'a' });
      expectSubscriptions(source.subscriptions).toBe('^--------!');
    });
    expect(refused).toEqual([[2, 'held']]);
    // z superseded x: x went stale.
    expect(tickets.map((t) => t.state)).toEqual(['stale', 'queued', 'queued']);
  });

  it("the ledger's `key` throwing errors the output, unsubscribes the source and `reset`, and changes nothing", () => {
    const scheduler = newScheduler();
    const boom = new Error('bad key');
    let ledger!: AdmissionLedger<string>;
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      ledger = new AdmissionLedger({
        key: (v: string) => {
          if (v === 'b') throw boom;
          return v;
        },
        window: 5,
        capacity: 10,
        scheduler,
      });
      const source = cold('a-b-c|');
      const reset = hot('-------');
      expectObservable(
        source.pipe(
          admit(ledger, { reset }),
          map((t) => t.value),
        ),
      ).toBe('a-#', undefined, boom);
      expectSubscriptions(source.subscriptions).toBe('^-!');
      expectSubscriptions(reset.subscriptions).toBe('^-!');
    });
    expect([ledger.held, ledger.queued]).toEqual([1, 1]);
  });

  it('`onRefuse` throwing errors the output; the refusal it was told about stands', () => {
    const scheduler = newScheduler();
    const boom = new Error('cannot count');
    let ledger!: AdmissionLedger<string>;
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      ledger = new AdmissionLedger({ key: keyOf, window: 5, capacity: 10, scheduler });
      const source = cold('a-x-b|', { a: 'a', x: 'a:1', b: 'b' });
      const onRefuse = (): void => {
        throw boom;
      };
      expectObservable(
        source.pipe(
          admit(ledger, { onRefuse }),
          map((t) => t.value),
        ),
      ).toBe('a-#', undefined, boom);
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
    expect(ledger.holder('a')?.value).toBe('a');
  });

  it('a sighting fed back from inside the emission of a ticket sees that ticket already held', () => {
    const ledger = new AdmissionLedger({ key: keyOf, window: 1000, capacity: 10 });
    const source = new Subject<string>();
    const admitted: string[] = [];
    const refusals: string[] = [];
    source.pipe(admit(ledger, { onRefuse: (r) => refusals.push(`${r.value}:${r.reason}`) })).subscribe((t) => {
      admitted.push(t.value);
      if (t.value === 'a') {
        source.next('a:again');
        source.next('b');
      }
    });
    source.next('a');
    expect(admitted).toEqual(['a', 'b']);
    expect(refusals).toEqual(['a:again:held']);
  });
});

/** One step of a generated run against a ledger. */
type Step = { op: 'offer'; key: number } | { op: 'start' | 'hold' | 'free'; pick: number } | { op: 'reset' } | { op: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant<'offer'>('offer'), key: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom<'start' | 'hold' | 'free'>('start', 'hold', 'free'), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant<Step>({ op: 'reset' }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant<'wait'>('wait'), ms: fc.integer({ min: 0, max: 8 }) }) },
);

describe('AdmissionLedger: properties', () => {
  it('never holds two current tickets for a key, and its sizes always match its tickets', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), fc.integer({ min: 1, max: 4 }), (steps, capacity) => {
        let clock = 0;
        const ledger = new AdmissionLedger<number, number>({
          key: (n) => n,
          window: 5,
          capacity,
          scheduler: {
            now: () => clock,
            schedule: () => {
              throw new Error('unused');
            },
          },
        });
        const issued: Ticket<number, number>[] = [];
        for (const s of steps) {
          if (s.op === 'offer') {
            const offer = ledger.offer(s.key);
            if (offer.admitted) issued.push(offer.ticket);
            else expect((offer as Refusal<number, number>).reason).toMatch(/^(held|full)$/);
          } else if (s.op === 'reset') ledger.reset();
          else if (s.op === 'wait') clock += s.ms;
          else if (issued.length > 0) {
            const ticket = issued[s.pick % issued.length];
            if (s.op === 'start') ticket.start();
            else if (s.op === 'hold') ticket.hold();
            else ticket.free();
          }
          const current = issued.filter((t) => t.isCurrent());
          const keys = current.map((t) => t.key);
          expect(new Set(keys).size).toBe(keys.length);
          expect(ledger.held).toBe(current.length);
          expect(ledger.queued).toBe(current.filter((t) => t.state === 'queued').length);
          expect(ledger.queued).toBeLessThanOrEqual(capacity);
          for (const t of current) expect(ledger.holder(t.key)).toBe(t);
        }
      }),
      { numRuns: 300 },
    );
  });
});
