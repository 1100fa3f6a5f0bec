/**
 * The stages of the enricher's pipeline around its owner, each a small operator: the input (Incus
 * events merged with the rounds, the stream's end on an error), the debounce, the ordered line,
 * the archive.
 */
import {
  EMPTY,
  MonoTypeOperatorFunction,
  Observable,
  OperatorFunction,
  SchedulerLike,
  catchError,
  connect,
  defer,
  endWith,
  filter,
  ignoreElements,
  map,
  merge,
  pipe,
  switchMap,
  take,
  takeUntil,
  tap,
} from 'rxjs';
import { debounceByKey, releaseInOrder } from '@rxfleet/operators';
import { IncusStreamItem } from '../../incus/api';
import { Logger } from '../../logger';
import { Archive } from './Archive';
import { ConnectionMark, DecodeStreamConfig, decodeStream } from './decodeStream';
import { EnrichedEvent, withDropped } from '../model/event';
import { Answer, LineEntry } from '../owner/lineEntry';
import { EnricherMetrics } from '../metrics/metrics';
import type { OwnerInput } from '../owner/fleetOwner';
import { RoundFeedConfig, roundFeed } from '../rounds/roundFeed';
import { WantedTable } from '../model/wanted';

/**
 * An error from the event stream is its end, not the enricher's failure: it is logged, and
 * everything the enricher holds is handed on as after a drain.
 */
export function endOnStreamError(logger: Logger): MonoTypeOperatorFunction<IncusStreamItem> {
  return catchError((error: unknown) => {
    logger.error({ err: error }, 'the event stream failed: handing on what is held');
    return EMPTY;
  });
}

const isConnect = (item: IncusStreamItem): boolean => item.kind === 'connected';

/** What the input stage hands on: the owner's input, with the stream's connects and disconnects marked in place. */
export type EnricherInput = OwnerInput | ConnectionMark;

/** Whether an input is a connect or a disconnect. */
export const isConnectionMark = (input: EnricherInput): input is ConnectionMark => input.kind === 'connection';

/**
 * The Incus events (decoded, connects and disconnects marked) merged with the rounds' names and
 * signals. The rounds start at the first connect, not at subscription, so round 1 is not abandoned
 * a moment later by it; every later connect runs a fast round at once. Completes when the stream
 * does, rounds and all.
 */
export function incusAndRounds(
  decode: DecodeStreamConfig,
  rounds: Omit<RoundFeedConfig, 'restart'>,
): OperatorFunction<IncusStreamItem, EnricherInput> {
  return (stream$) =>
    stream$.pipe(
      connect((shared$): Observable<EnricherInput> =>
        merge(
          shared$.pipe(decodeStream(decode)),
          shared$.pipe(
            filter(isConnect),
            take(1),
            switchMap(() => roundFeed({ ...rounds, restart: shared$.pipe(filter(isConnect)) })),
            takeUntil(shared$.pipe(ignoreElements(), endWith(true))),
          ),
        ),
      ),
    );
}

/** Closes the debounce window of a rename's old name; never leaves the debounce stage. */
interface Flush {
  readonly kind: 'flush';
  readonly key: string;
}

const isEvent = (input: OwnerInput | Flush): input is EnrichedEvent => 'action' in input;
const isOwnerInput = (input: EnricherInput): input is OwnerInput => input.kind !== 'connection';
// The kind is part of the key: an instance and a network of one name are two subjects.
const subjectKey = (kind: string, project: string, name: string): string => `${kind}/${project}/${name}`;

/** Options for {@link debounceSubjects}. */
export interface DebounceSubjectsConfig {
  /** Quiet that closes a burst; 0 turns debouncing off. */
  readonly window: number;
  readonly wanted: WantedTable;
  readonly metrics: EnricherMetrics;
  readonly scheduler: SchedulerLike;
}

/** An input with whether the chain was warm when it came. */
type Tagged = readonly [input: OwnerInput | Flush, warm: boolean];

/**
 * The chain (upstream's "chain warm"): warm once a round has ended well while the stream was
 * connected, cold again at every disconnect. Both causes are in the input stage's own output (the
 * marks, and the rounds' ends from `roundFeed`), so the debounce reads the warmth off its input:
 * nothing downstream feeds it back.
 */
export interface Chain {
  readonly connected: boolean;
  readonly warm: boolean;
}

/** The chain before the stream first connects. */
export const COLD_CHAIN: Chain = { connected: false, warm: false };

/** The chain after `input`. */
export function chainAfter(chain: Chain, input: EnricherInput): Chain {
  if (input.kind === 'connection') return input.connected === chain.connected ? chain : { connected: input.connected, warm: false };
  if (input.kind === 'round-end' && input.ok && chain.connected && !chain.warm) return { connected: true, warm: true };
  return chain;
}

// Each input tagged with the chain's warmth as it came (per subscription); the marks end here.
function tagWarmth(): OperatorFunction<EnricherInput, Tagged> {
  return (input$) =>
    defer(() => {
      let chain = COLD_CHAIN;
      return input$.pipe(
        tap((input) => (chain = chainAfter(chain, input))),
        filter(isOwnerInput),
        map((input): Tagged => [input, chain.warm]),
      );
    });
}

/**
 * Collapses bursts per subject (`debounceByKey`): the first at once, the last after `window` of
 * quiet, the middles counted as dropped. Only a collapsible action from Incus collapses, and only
 * once a round has ended since the stream last connected ({@link chainAfter}, read off the input's
 * connection marks and round ends): before that, what the stream says may be all there is.
 * Anything else closes its subject's window first, so it never overtakes an older event about the
 * same subject, and a rename closes the window of its old name too (the old name is the same
 * subject). The round's projects, networks and signals pass straight through; the connection
 * marks go no further. Composed of rxjs operators and the kit's: a callback that throws errors the
 * output.
 */
export function debounceSubjects(config: DebounceSubjectsConfig): OperatorFunction<EnricherInput, OwnerInput> {
  const { window, wanted, metrics, scheduler } = config;
  if (window <= 0) return filter(isOwnerInput);
  return pipe(
    tagWarmth(),
    // A rename's flush of its old name goes first: `merge` hears the shared input in that order.
    connect((tagged$: Observable<Tagged>) =>
      merge(
        tagged$.pipe(
          filter(([input]) => isEvent(input) && input.oldName !== undefined),
          map(([input, warm]): Tagged => {
            const event = input as EnrichedEvent;
            return [{ kind: 'flush', key: subjectKey(event.kind, event.project, event.oldName as string) }, warm];
          }),
        ),
        tagged$,
      ),
    ),
    debounceByKey<Tagged, string>({
      key: ([input]) =>
        isEvent(input) ? subjectKey(input.kind, input.project, input.name) : input.kind === 'flush' ? input.key : undefined,
      window,
      collapsible: ([input, warm]) =>
        warm && isEvent(input) && input.origin === 'incus' && input.status === 'ok' && wanted.get(input.action)?.debounce === true,
      superseded: ([input, warm]) => (isEvent(input) ? [withDropped(input, 'debounce'), warm] : undefined),
      scheduler,
    }),
    map(([input]) => input),
    filter((input): input is OwnerInput => {
      if (!isEvent(input)) return input.kind !== 'flush';
      if (input.status !== 'dropped') return true;
      metrics.dropped('debounce');
      return false;
    }),
  );
}

/**
 * The ordered line (`releaseInOrder` in its self-settling form, on a ring): each entry leaves with
 * its answer once everything that arrived before it has left, whatever order the answers come in.
 * The owner answers each entry through a callback, so the line holds one place per entry and no
 * subscription (an Observable per entry only for the line to subscribe to it cost a subscriber, a
 * subscription and a teardown per event). When the owner is done (the stream ended, or a drain),
 * the whole line is handed on at once, in order: an entry not answered yet leaves as it arrived.
 * `onLength` follows how many entries wait.
 */
export function releaseLine(onLength: (length: number) => void): OperatorFunction<LineEntry, Answer> {
  let length = 0;
  return pipe(
    tap(() => onLength(++length)),
    connect((entries$) => entries$.pipe(releaseInOrder({ drain: entries$.pipe(ignoreElements(), endWith(true)) }))),
    tap(() => onLength(--length)),
    map((out: LineEntry | Answer): Answer => (out instanceof LineEntry ? { event: out.event } : out)),
  );
}

/**
 * The archive: what says nothing new, what is older than what was already sent (E10), and what is
 * not served goes nowhere (see {@link Archive.judge}); what is dropped is counted by reason when
 * it came from Incus, a stale answer always. What goes on is counted by status. Composed of rxjs
 * operators: a verdict that throws errors the output.
 */
export function archiveFilter(archive: Archive, metrics: EnricherMetrics): OperatorFunction<Answer, EnrichedEvent> {
  return pipe(
    map((answer) => {
      const verdict = archive.judge(answer);
      if ('out' in verdict) {
        metrics.emitted(verdict.out.status);
        return verdict.out;
      }
      if (verdict.drop === 'stale' || (verdict.drop !== 'silent' && answer.event.origin === 'incus')) metrics.dropped(verdict.drop);
      return undefined;
    }),
    filter((out): out is EnrichedEvent => out !== undefined),
  );
}
