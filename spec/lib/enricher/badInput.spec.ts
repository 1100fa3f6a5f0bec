import { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Subject } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { createEnricher } from '../../../lib/enricher/pipeline/createEnricher';
import { FakeIncus } from '../../helpers/FakeIncus';
import { metric, newTs, settings, smallWorld } from './harness';

interface Line {
  at: number;
  msg: string;
  key?: string;
  suppressed?: number;
  reason?: string;
}

describe('the enricher on bad input', () => {
  it('counts 5,000 malformed events, every one, and logs at most six lines a minute of them: five in full and a summary', async () => {
    const ts = newTs();
    const lines: Line[] = [];
    const stream = new Writable({
      write: (chunk, _enc, done) => {
        for (const text of String(chunk).split('\n').filter(Boolean)) lines.push({ ...(JSON.parse(text) as Line), at: ts.now() });
        done();
      },
    });
    const registry = new Registry();
    let fake: FakeIncus | undefined;
    ts.run(() => {
      fake = smallWorld(ts);
      const events = new Subject<IncusStreamItem>();
      const enricher = createEnricher({
        events$: events,
        reader: fake,
        config: settings(),
        registry,
        scheduler: ts,
        logger: pino({ level: 'info' }, stream),
      });
      enricher.events$.subscribe();
      // 5,000 events without a name, one every 24 ms: two minutes of them; and 50 items of a kind
      // nobody knows in the first second, limited on their own.
      for (let i = 0; i < 5000; i++) ts.schedule(() => events.next((fake as FakeIncus).event('instance-updated', 'default', '')), i * 24);
      for (let i = 0; i < 50; i++) ts.schedule(() => events.next({ kind: 'gibberish' } as unknown as IncusStreamItem), i * 20);
      ts.schedule(() => enricher.drain(), 150_000);
    });

    expect(await metric(registry, 'enricher_events_malformed_total')).toBe(5050);
    const malformed = lines.filter((l) => l.key === 'malformed_event');
    // Each minute: the first five in full, then one summary at its end naming how many more came.
    for (let minute = 0; minute < 3; minute++)
      expect(malformed.filter((l) => l.at >= minute * 60_000 && l.at < (minute + 1) * 60_000).length).toBeLessThanOrEqual(6);
    const summaries = malformed.filter((l) => l.suppressed !== undefined);
    const full = malformed.filter((l) => l.suppressed === undefined);
    expect(full.map((l) => l.msg)).toEqual(Array(10).fill('malformed Incus event ignored'));
    expect(full[0].reason).toBeDefined();
    expect(summaries.map((l) => l.at)).toEqual([60_000, 120_000]);
    expect(full.length + summaries.reduce((n, l) => n + (l.suppressed as number), 0)).toBe(5000);
    const unknown = lines.filter((l) => l.key === 'unknown_item');
    expect(unknown.map((l) => l.suppressed ?? 'full')).toEqual(['full', 'full', 'full', 'full', 'full', 45]);
  });

  it('logs the summary still pending when it stops', async () => {
    const ts = newTs();
    const lines: Line[] = [];
    const stream = new Writable({
      write: (chunk, _enc, done) => {
        for (const text of String(chunk).split('\n').filter(Boolean)) lines.push({ ...(JSON.parse(text) as Line), at: ts.now() });
        done();
      },
    });
    ts.run(() => {
      const fake = smallWorld(ts);
      const events = new Subject<IncusStreamItem>();
      const enricher = createEnricher({
        events$: events,
        reader: fake,
        config: settings(),
        registry: new Registry(),
        scheduler: ts,
        logger: pino({ level: 'info' }, stream),
      });
      enricher.events$.subscribe();
      for (let i = 0; i < 8; i++) ts.schedule(() => events.next(fake.event('instance-updated', 'default', 'bad/name')), i);
      ts.schedule(() => enricher.drain(), 1000);
    });
    const malformed = lines.filter((l) => l.key === 'malformed_event');
    expect(malformed.map((l) => [l.at, l.suppressed])).toEqual([
      [0, undefined],
      [1, undefined],
      [2, undefined],
      [3, undefined],
      [4, undefined],
      [1000, 3],
    ]);
  });
});
