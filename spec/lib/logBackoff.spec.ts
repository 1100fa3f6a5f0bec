import { LogBackoff } from '../../lib/logBackoff';

describe('LogBackoff', () => {
  it('logs the first failure, then the first after a gap that doubles up to its cap', () => {
    const backoff = new LogBackoff({ firstGapMs: 1000, maxGapMs: 4000 });
    // A failure every 500 ms for 20 s.
    const logged: Array<[number, number]> = [];
    for (let t = 0; t <= 20_000; t += 500) {
      const { log, quiet } = backoff.next(t);
      if (log) logged.push([t, quiet]);
    }
    expect(logged).toEqual([
      [0, 0],
      [1000, 1],
      [3000, 3],
      [7000, 7],
      [11_000, 7],
      [15_000, 7],
      [19_000, 7],
    ]);
  });

  it('starts again from the first gap after a reset', () => {
    const backoff = new LogBackoff({ firstGapMs: 1000 });
    expect(backoff.next(0).log).toBe(true);
    expect(backoff.next(500).log).toBe(false);
    backoff.reset();
    expect(backoff.next(600)).toEqual({ log: true, quiet: 0 });
    expect(backoff.next(1000).log).toBe(false);
    expect(backoff.next(1600)).toEqual({ log: true, quiet: 1 });
  });
});
