import { map, merge, tap } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { ElectionEvent } from '../../../lib/election/campaign';
import { leadershipGate } from '../../../lib/election/leadershipGate';
import { newScheduler } from '../../helpers/marbles';

const EVENTS: Record<string, ElectionEvent> = { w: 'won', l: 'lost' };

describe('leadershipGate: the election drives the pause gate', () => {
  it('opens the gate on won and closes it on lost, dropping repeats, with won$ and lost$ once per change', () => {
    newScheduler().run(({ cold, expectObservable, flush }) => {
      const gate = new PauseGate(true);
      const election$ = cold('-w-w-l-l-w', EVENTS);
      const changes: boolean[] = [];
      const leadership = leadershipGate(election$, gate, (leads) => changes.push(leads));
      const seen$ = merge(leadership.won$.pipe(map(() => 'W')), leadership.lost$.pipe(map(() => 'L')));
      expectObservable(seen$).toBe('-W---L---W');
      expectObservable(gate.paused$).toBe('pr---p---r', { p: true, r: false });
      flush();
      expect(changes).toEqual([true, false, true]);
      expect(leadership.leads()).toBe(true);
    });
  });

  it('moves the gate before won$ and lost$ reach a subscriber: a round at once is not paused, a reset lets nothing in', () => {
    newScheduler().run(({ cold, flush }) => {
      const gate = new PauseGate(true);
      const leadership = leadershipGate(cold('-w-l', EVENTS), gate);
      const pausedWhenHeard: boolean[] = [];
      merge(leadership.won$, leadership.lost$)
        .pipe(tap(() => pausedWhenHeard.push(gate.paused)))
        .subscribe();
      flush();
      expect(pausedWhenHeard).toEqual([false, true]);
    });
  });

  it('campaigns from the call until stop: the election is subscribed at once, whoever listens, and unsubscribed by stop', () => {
    newScheduler().run(({ cold, expectSubscriptions, flush }) => {
      const gate = new PauseGate(true);
      const election$ = cold<ElectionEvent>('-w-----', EVENTS);
      const leadership = leadershipGate(election$, gate);
      expectSubscriptions(election$.subscriptions).toBe('^--!');
      cold('---x').subscribe(() => leadership.stop());
      flush();
      expect(gate.paused).toBe(false);
    });
  });
});
