import { handleShutdownSignals } from '../../../bin/daemon/shutdownSignals';

// A signal nobody else in the test process listens to, raised by hand.
const SIGNAL: NodeJS.Signals = 'SIGUSR2';
const raise = (): boolean => process.emit(SIGNAL, SIGNAL);

describe('handleShutdownSignals (DECISIONS P9)', () => {
  afterEach(() => jest.useRealTimers());

  it('the first signal runs the graceful stop, then exits 0', async () => {
    const exits: number[] = [];
    let finish: () => void = () => undefined;
    const graceful = jest.fn(() => new Promise<void>((r) => (finish = r)));
    const remove = handleShutdownSignals({ graceful, exit: (c) => exits.push(c), signals: [SIGNAL] });
    raise();
    expect(graceful).toHaveBeenCalledTimes(1);
    expect(exits).toEqual([]);
    finish();
    await Promise.resolve();
    await Promise.resolve();
    expect(exits).toEqual([0]);
    remove();
  });

  it('a second signal exits at once with 1, without a second graceful stop', () => {
    const exits: number[] = [];
    const graceful = jest.fn(() => new Promise<void>(() => undefined));
    const remove = handleShutdownSignals({ graceful, exit: (c) => exits.push(c), signals: [SIGNAL] });
    raise();
    raise();
    expect(graceful).toHaveBeenCalledTimes(1);
    expect(exits).toEqual([1]);
    remove();
  });

  it('exits with 1 when the grace period runs out', () => {
    jest.useFakeTimers();
    const exits: number[] = [];
    const remove = handleShutdownSignals({
      graceful: () => new Promise<void>(() => undefined),
      graceMs: 30_000,
      exit: (c) => exits.push(c),
      signals: [SIGNAL],
    });
    raise();
    jest.advanceTimersByTime(29_999);
    expect(exits).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(exits).toEqual([1]);
    remove();
  });

  it('removing the handlers stops listening', () => {
    const graceful = jest.fn(() => Promise.resolve());
    const before = process.listenerCount(SIGNAL);
    const remove = handleShutdownSignals({ graceful, exit: () => undefined, signals: [SIGNAL] });
    expect(process.listenerCount(SIGNAL)).toBe(before + 1);
    remove();
    expect(process.listenerCount(SIGNAL)).toBe(before);
  });
});
