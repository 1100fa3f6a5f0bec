import { of } from 'rxjs';
import { pauseWhen } from '@rxfleet/operators';
import { PauseGate, PausedError } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';

const states = { t: true, f: false };

describe('pauseWhen', () => {
  it('drops (and reports) values while paused, passes them while open, buffers nothing', () => {
    const scheduler = newScheduler();
    const dropped: string[] = [];
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('--t---f---', states);
      const source = cold('abcdefgh|');
      expectObservable(source.pipe(pauseWhen(paused, { onDrop: (v) => dropped.push(v) }))).toBe('ab----gh|');
      expectSubscriptions(paused.subscriptions).toBe('^-------!');
      expectSubscriptions(source.subscriptions).toBe('^-------!');
    });
    expect(dropped).toEqual(['c', 'd', 'e', 'f']);
  });

  it('starts paused when asked, until the pause state first says otherwise', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable }) => {
      const paused = hot('---f--', states);
      const source = cold('abcdef|');
      expectObservable(source.pipe(pauseWhen(paused, { initiallyPaused: true }))).toBe('---def|');
    });
  });

  it('reads a synchronous current state before the first value', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(cold('ab|').pipe(pauseWhen(of(true)))).toBe('--|');
    });
  });

  it('keeps the last state when the pause state completes', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const paused = cold('-(t|)', states);
      expectObservable(cold('abc|').pipe(pauseWhen(paused))).toBe('a--|');
    });
  });

  it('errors when the pause state errors, unsubscribing the source', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('--#', states);
      const source = cold('abcd|');
      expectObservable(source.pipe(pauseWhen(paused))).toBe('ab#');
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
  });

  it('passes the source error on and unsubscribes the pause state', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('------', states);
      expectObservable(cold('a-#').pipe(pauseWhen(paused))).toBe('a-#');
      expectSubscriptions(paused.subscriptions).toBe('^-!');
    });
  });

  it('unsubscribing unsubscribes both', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('------', states);
      const source = cold('abcdef|');
      expectObservable(source.pipe(pauseWhen(paused)), '--!').toBe('ab');
      expectSubscriptions(paused.subscriptions).toBe('^-!');
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
  });

  it('follows a PauseGate', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const gate = new PauseGate(true);
      scheduler.schedule(() => gate.resume(), 2);
      scheduler.schedule(() => gate.pause(), 4);
      expectObservable(cold('abcdef|').pipe(pauseWhen(gate.paused$))).toBe('--cd--|');
    });
  });
});

describe('PauseGate', () => {
  it('paused$ replays the current state and emits each change once', () => {
    const gate = new PauseGate();
    const seen: boolean[] = [];
    gate.paused$.subscribe((p) => seen.push(p));
    gate.resume();
    gate.pause();
    gate.pause();
    gate.resume();
    expect(seen).toEqual([false, true, false]);
    expect(gate.paused).toBe(false);
  });

  it('a signal aborts at the next pause, with a PausedError', () => {
    const gate = new PauseGate();
    const first = gate.signal();
    const second = gate.signal();
    expect(first.aborted).toBe(false);
    gate.pause();
    expect(first.aborted && second.aborted).toBe(true);
    expect(first.reason).toBeInstanceOf(PausedError);
  });

  it('a signal taken while paused is already aborted; one taken after resuming is live', () => {
    const gate = new PauseGate(true);
    expect(gate.signal().aborted).toBe(true);
    gate.resume();
    const live = gate.signal();
    expect(live.aborted).toBe(false);
    gate.pause();
    expect(live.aborted).toBe(true);
    gate.resume();
    expect(live.aborted).toBe(true);
    expect(gate.signal().aborted).toBe(false);
  });
});
