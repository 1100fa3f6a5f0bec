import { Subject, take } from 'rxjs';
import { PauseGate, pauseWhen } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

const states = { t: true, f: false };

describe('pauseWhen: the rxjs contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    const dropped: string[] = [];
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('f---t-----f--', states);
      const source = cold('-a-b-c-d-e-f-');
      expectObservable(source.pipe(pauseWhen(paused, { onDrop: (v) => dropped.push(v) }))).toBe('-a-b-------f-');
      expectSubscriptions(paused.subscriptions).toBe('^------------');
      expectSubscriptions(source.subscriptions).toBe('^------------');
    });
    expect(dropped).toEqual(['c', 'd', 'e']);
  });

  it('`onDrop` throwing errors the output and unsubscribes the source and the pause state', () => {
    const scheduler = newScheduler();
    const boom = new Error('cannot count');
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('--t---', states);
      const source = cold('a-b-c|');
      const onDrop = (): void => {
        throw boom;
      };
      expectObservable(source.pipe(pauseWhen(paused, { onDrop }))).toBe('a-#', undefined, boom);
      expectSubscriptions(source.subscriptions).toBe('^-!');
      expectSubscriptions(paused.subscriptions).toBe('^-!');
    });
  });

  it('unsubscribing downstream (take) unsubscribes the source and the pause state', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const paused = hot('------', states);
      const source = cold('-ab--|');
      expectObservable(source.pipe(pauseWhen(paused), take(1))).toBe('-(a|)');
      expectSubscriptions(source.subscriptions).toBe('^!');
      expectSubscriptions(paused.subscriptions).toBe('^!');
    });
  });

  it('a value fed back after the consumer paused the gate from inside an emission is dropped', () => {
    const gate = new PauseGate();
    const source = new Subject<string>();
    const passed: string[] = [];
    const dropped: string[] = [];
    source.pipe(pauseWhen(gate.paused$, { onDrop: (v) => dropped.push(v) })).subscribe((v) => {
      passed.push(v);
      if (v === 'a') {
        gate.pause();
        source.next('b');
      }
    });
    source.next('a');
    gate.resume();
    source.next('c');
    expect(passed).toEqual(['a', 'c']);
    expect(dropped).toEqual(['b']);
  });
});
