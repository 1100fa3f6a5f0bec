/**
 * The round as a source of the enricher's input, merged with the Incus events: its names, paced,
 * and what it says as it goes (listings answered, the wire map whole, each round's end).
 */
import { Observable, ObservableInput, SchedulerLike } from 'rxjs';
import { pacedSweep } from '@rxfleet/operators';
import { EnrichedEvent, newEvent } from '../model/event';
import { ObservableIncusReader } from '../reads/observableReader';
import { RoundContext, RoundSignal, RoundView, roundScript } from './round';

/** A project or network a round hands on: the enricher reads it and tells `round` it landed. */
export type RoundRead =
  | { readonly kind: 'round-project'; readonly round: RoundContext; readonly name: string }
  | { readonly kind: 'round-network'; readonly round: RoundContext; readonly owner: string; readonly name: string };

/** The end of a round that was not abandoned. */
export interface RoundEnd {
  readonly kind: 'round-end';
  readonly round: number;
  readonly ok: boolean;
  readonly error?: unknown;
}

/**
 * Everything the round hands the enricher: an instance name as an `instance-updated` of origin
 * `round` (taking the path a live event takes, so an unchanged instance costs a read and no event),
 * a project or network to read, a signal, an end.
 */
export type RoundInput = EnrichedEvent | RoundRead | RoundSignal | RoundEnd;

/** Options for {@link roundFeed}. */
export interface RoundFeedConfig {
  readonly reader: ObservableIncusReader;
  /** The model's keys, recorded when each listing goes out (E5). */
  readonly view: RoundView;
  /** Ms between the reads of a paced round. */
  readonly delay: number;
  /** Ms between the end of a round and the start of the next. */
  readonly interval: number;
  /** Each emission abandons the round in progress and starts a fast one (a reconnect). */
  readonly restart: ObservableInput<unknown>;
  /** Ms to wait after the n-th failed round in a row (E3). */
  readonly failureDelay?: (failures: number) => number;
  readonly scheduler: SchedulerLike;
}

/**
 * Rounds over the fleet for ever, from subscription: round 1 at once and fast, then one every
 * `interval`, paced by `delay`, a fast one at once on every `restart`, a failed one retried soon
 * (E3). Names are paced (`pacedSweep`); signals go out when they happen, so a prune or the wire
 * map becoming whole never waits for a name's turn. A round abandoned for a newer one is marked
 * so, and whatever it still says is ignored.
 */
export function roundFeed(config: RoundFeedConfig): Observable<RoundInput> {
  const { reader, view, delay, interval, restart, failureDelay, scheduler } = config;
  return new Observable<RoundInput>((subscriber) => {
    let current: RoundContext | undefined;
    return pacedSweep({
      list: (n) => {
        if (current !== undefined) current.abandoned = true;
        const round = new RoundContext(n);
        current = round;
        return roundScript(round, view, (signal) => subscriber.next(signal), reader);
      },
      delay,
      interval,
      restart,
      scheduler,
      ...(failureDelay !== undefined ? { failureDelay } : {}),
    }).subscribe({
      next: (event) => {
        if (event.kind === 'end') {
          subscriber.next(
            event.ok
              ? { kind: 'round-end', round: event.round, ok: true }
              : { kind: 'round-end', round: event.round, ok: false, error: event.error },
          );
          return;
        }
        const round = current as RoundContext;
        const { item } = event;
        if (item.kind === 'project') subscriber.next({ kind: 'round-project', round, name: item.name });
        else if (item.kind === 'network') subscriber.next({ kind: 'round-network', round, owner: item.owner, name: item.name });
        else
          subscriber.next(
            newEvent({ action: 'instance-updated', project: item.project, name: item.name, origin: 'round', received: scheduler.now() }),
          );
      },
      error: (error: unknown) => subscriber.error(error),
    });
  });
}
