import { Observable, Subscription, distinctUntilChanged, filter, map, share } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { ElectionEvent } from './campaign';

/** Leadership as a daemon's pipeline takes it. */
export interface Leadership {
  /** Each time this instance becomes leader. */
  readonly won$: Observable<unknown>;
  /** Each time it stops being leader. */
  readonly lost$: Observable<unknown>;
  /** Whether it leads now. */
  leads(): boolean;
  /** Stops campaigning (the key expires after the bucket's TTL, as upstream) and stops driving the gate. */
  stop(): void;
}

/**
 * The election drives the pause gate: open while this instance leads, closed otherwise. Repeated
 * events are dropped (`won` twice is one leadership). The gate moves first: it has resumed before
 * `won$` reaches a subscriber (so a discovery round at once is not paused) and paused before
 * `lost$` does (so resetting admission lets nothing new in). Subscribes to `election$` at once,
 * which starts the campaign; `onChange` hears every change after the gate has moved.
 */
export function leadershipGate(election$: Observable<ElectionEvent>, gate: PauseGate, onChange?: (leads: boolean) => void): Leadership {
  let leads = false;
  const leading$ = election$.pipe(
    map((event) => event === 'won'),
    distinctUntilChanged(),
    share(),
  );
  const driving: Subscription = leading$.subscribe((now) => {
    leads = now;
    if (now) gate.resume();
    else gate.pause();
    onChange?.(now);
  });
  return {
    won$: leading$.pipe(filter((now) => now)),
    lost$: leading$.pipe(filter((now) => !now)),
    leads: () => leads,
    stop: () => driving.unsubscribe(),
  };
}
