import pino from 'pino';
import { Writable } from 'node:stream';
import { VirtualTimeScheduler } from 'rxjs';
import { RateLimitedLog } from '../../lib/rateLimitedLog';

function capture(): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({ write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()) });
  return {
    logger: pino({ level: 'debug' }, stream),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

/** Runs `steps` (time in ms, action) in virtual time. */
function at(scheduler: VirtualTimeScheduler, steps: [number, () => void][]): void {
  for (const [time, action] of steps) scheduler.schedule(action, time);
  scheduler.flush();
}

describe('RateLimitedLog', () => {
  it('logs the first lines of an interval in full, then one summary at its end naming how many were held back', () => {
    const { logger, lines } = capture();
    const scheduler = new VirtualTimeScheduler();
    const log = new RateLimitedLog({ logger, burst: 2, intervalMs: 1000, scheduler });
    const junk = (n: number) => () => log.log('rpc_reply', { subject: `s.${n}` }, `junk ${n}`);
    at(scheduler, [
      [0, junk(1)],
      [10, junk(2)],
      [20, junk(3)],
      [30, junk(4)],
      [40, junk(5)],
      [1500, junk(6)],
    ]);
    expect(lines().map((l) => [l.msg, l.key, l.subject, l.suppressed])).toEqual([
      ['junk 1', 'rpc_reply', 's.1', undefined],
      ['junk 2', 'rpc_reply', 's.2', undefined],
      ['3 more like this in the last 1 s, not logged (5 in all since start); the last: junk 5', 'rpc_reply', 's.5', 3],
      ['junk 6', 'rpc_reply', 's.6', undefined],
    ]);
    expect(lines()[2].level).toBe(40);
    expect(log.total('rpc_reply')).toBe(6);
  });

  it('keeps a steady flood to burst + 1 lines per interval, and limits each key on its own', () => {
    const { logger, lines } = capture();
    const scheduler = new VirtualTimeScheduler();
    const log = new RateLimitedLog({ logger, burst: 3, intervalMs: 1000, scheduler });
    const steps: [number, () => void][] = [];
    // 1,000 lines a second for five seconds on one key, and one line a second on another.
    for (let t = 0; t < 5000; t++) steps.push([t, () => log.log('flood', {}, 'bad frame')]);
    for (let t = 0; t < 5000; t += 1000) steps.push([t + 500, () => log.log('trickle', {}, 'one')]);
    at(scheduler, steps);
    const flood = lines().filter((l) => l.key === 'flood');
    expect(flood.length).toBe(5 * 4);
    const summaries = flood.filter((l) => l.suppressed !== undefined).map((l) => l.suppressed as number);
    // Five summaries, one per interval; with the 15 lines logged in full they account for all 5,000.
    expect(summaries).toHaveLength(5);
    expect(summaries.reduce((a, b) => a + b, 0)).toBe(5000 - 15);
    expect(lines().filter((l) => l.key === 'trickle')).toHaveLength(5);
    expect(log.total()).toBe(5005);
  });

  it('arms no timer while nothing is held back, and close() logs what is pending', () => {
    const { logger, lines } = capture();
    const scheduler = new VirtualTimeScheduler();
    const log = new RateLimitedLog({ logger, burst: 1, intervalMs: 60_000, scheduler });
    log.log('a', {}, 'first');
    expect(scheduler.actions).toHaveLength(0);
    log.log('a', {}, 'second');
    expect(scheduler.actions).toHaveLength(1);
    log.close();
    expect(lines().map((l) => l.msg)).toEqual([
      'first',
      '1 more like this in the last 60 s, not logged (2 in all since start); the last: second',
    ]);
    log.log('a', {}, 'after close');
    expect(lines().at(-1)?.msg).toBe('after close');
  });
});
