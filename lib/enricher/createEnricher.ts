/**
 * The enricher pipeline, top to bottom: Incus stream items are decoded against the wanted table,
 * bursts are collapsed per subject, and the one owner routes, reads, settles and releases them in
 * arrival order, while rounds keep the model true and the cold store keeps it across restarts.
 */
import { BehaviorSubject, EMPTY, Observable, SchedulerLike, Subject, asyncScheduler, distinctUntilChanged, interval, mergeMap, of, takeUntil } from 'rxjs';
import { Registry } from 'prom-client';
import { debounceByKey } from '@rxfleet/operators';
import { IncusReader, IncusStreamItem } from '../incus/api';
import { Logger, silentLogger } from '../logger';
import { OpenColdStore } from './coldStore';
import { EnricherSettings } from './config';
import { decodeEvent, isRefusal } from './decodeEvent';
import { EnrichedEvent, withDropped } from './event';
import { EnricherCore } from './EnricherCore';
import { EnricherMetrics } from './metrics';
import { ObservableIncusReader, observableReader, timedReader } from './observableReader';
import { WantedTable, daemonWanted } from './wanted';

/** What the pipeline is built from. */
export interface EnricherDeps {
  /** The listener's items: events, connects and disconnects, malformed frames. */
  events$: Observable<IncusStreamItem>;
  /** The REST client (promises), or an Observable reader answering in virtual time (specs). */
  reader: IncusReader | ObservableIncusReader;
  config: EnricherSettings;
  /** Default silent. */
  logger?: Logger;
  /** The daemon's registry (never prom-client's global one). */
  registry: Registry;
  /** Where every delay, timeout, window and round is timed. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** Opens the cold store (the daemon: the file `config.storeFile` names). Default none. */
  store?: OpenColdStore;
  /** Default: the consumer's wants from `config.wants` plus the enricher's own. */
  wanted?: WantedTable;
}

/** What the daemon reads off a running enricher. */
export interface EnricherStatus {
  connected: boolean;
  /** The model can place instances on networks (the first round's networks landed, or a cold store was loaded). */
  warm: boolean;
  ready: boolean;
  /** Events in the ordered line. */
  line: number;
  projects: number;
  instances: number;
  networks: number;
}

/** A running (once subscribed) enricher. */
export interface Enricher {
  /**
   * The enriched events, in the order they arrived. Subscribe once: the subscription is the
   * enricher (it starts on subscribe; unsubscribing abandons everything in flight, where
   * `drain` would hand it on). Completes after a drain, or when `events$` completes.
   */
  readonly events$: Observable<EnrichedEvent>;
  /** Connected and warm: what `/ready` answers. Replays the current value. */
  readonly ready$: Observable<boolean>;
  /** Facts for `/health` and `/ready` bodies. */
  status(): EnricherStatus;
  /**
   * Stops taking events: what debounce holds is flushed, the whole line is handed on in order
   * (unanswered events as they arrived), `events$` completes and the cold store is written a last
   * time. Safe to call more than once.
   */
  drain(): void;
  /** Resolves once `events$` has completed or been unsubscribed and the last cold store write is done. */
  readonly stopped: Promise<void>;
}

/**
 * Builds the enricher for the daemon (or anyone's pipeline): see {@link Enricher}. Nothing runs
 * until `events$` is subscribed.
 */
export function createEnricher(deps: EnricherDeps): Enricher {
  const { config, registry } = deps;
  const logger = deps.logger ?? silentLogger;
  const scheduler = deps.scheduler ?? asyncScheduler;
  const metrics = new EnricherMetrics(registry);
  const wanted = deps.wanted ?? daemonWanted(config.wants);
  const store = deps.store?.({ logger, onWrite: (ok) => metrics.storeWrites.labels(ok ? 'ok' : 'failed').inc() });

  const drain$ = new Subject<void>();
  const ready$ = new BehaviorSubject(false);
  let connected = false;
  // Debounce collapses only once a round has ended since the last connect (upstream's "chain
  // warm"): before that, what the stream says may be all there is to go on.
  let chainWarm = false;
  let core: EnricherCore | undefined;
  let started = false;
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));

  const updateReady = (): void => ready$.next(connected && core?.warm === true);

  const events$ = new Observable<EnrichedEvent>((subscriber) => {
    if (started) {
      subscriber.error(new Error('an enricher runs once: subscribe to events$ a single time'));
      return;
    }
    started = true;
    const reader = timedReader(observableReader(deps.reader), {
      readTimeout: config.readTimeout,
      scheduler,
      onRead: (kind, outcome, ms) => metrics.read(kind, outcome, ms),
    });
    const initial = store?.load();
    if (initial !== undefined) logger.info('cold store loaded: serving what the last run held until the first round corrects it');
    const owner = new EnricherCore(
      {
        reader,
        wanted,
        served: config.projects,
        workers: config.workers,
        ipTimeout: config.ipTimeout,
        readDelay: config.readDelay,
        sweepInterval: config.sweepInterval,
        ttl: config.ttl,
        configExclude: config.configExclude,
        scheduler,
        logger,
        metrics,
        ...(initial !== undefined ? { initial } : {}),
        onChange: ({ warm, roundEnded }) => {
          metrics.warm.set(warm ? 1 : 0);
          if (roundEnded?.ok === true && connected) chainWarm = true;
          updateReady();
        },
      },
      subscriber,
    );
    core = owner;
    metrics.warm.set(owner.warm ? 1 : 0);
    owner.start();

    let finalWrite: Promise<void> = Promise.resolve();
    const writeIfDirty = (): void => {
      const document = owner.snapshotIfDirty();
      if (document !== undefined && store !== undefined) finalWrite = store.save(document);
    };
    if (store !== undefined) {
      subscriber.add(interval(config.storeInterval, scheduler).subscribe(() => owner.post(writeIfDirty)));
    }

    const decoded$ = deps.events$.pipe(
      takeUntil(drain$),
      mergeMap((item): Observable<EnrichedEvent> => {
        switch (item.kind) {
          case 'connected':
            connected = true;
            metrics.connected.set(1);
            logger.info('event stream connected');
            owner.post(() => owner.connected());
            updateReady();
            return EMPTY;
          case 'disconnected':
            connected = false;
            chainWarm = false;
            metrics.connected.set(0);
            logger.warn({ reason: item.reason }, 'event stream disconnected');
            updateReady();
            return EMPTY;
          case 'malformed':
            metrics.eventsMalformed.inc();
            return EMPTY;
          case 'event': {
            metrics.eventsReceived.inc();
            const decoded = decodeEvent(item.event, wanted, scheduler.now());
            if (!isRefusal(decoded)) return of(decoded);
            if (decoded.refused === 'unwanted') {
              metrics.eventsDropped.labels('unwanted').inc();
            } else {
              metrics.eventsMalformed.inc();
              logger.warn({ reason: decoded.reason, source: item.event?.source }, 'malformed Incus event ignored');
            }
            return EMPTY;
          }
          default:
            metrics.eventsMalformed.inc();
            logger.warn({ item: (item as { kind?: unknown }).kind }, 'unknown stream item ignored');
            return EMPTY;
        }
      }),
    );
    const collapsed$ =
      config.debounceWindow > 0
        ? decoded$.pipe(
            debounceByKey<EnrichedEvent, string>({
              // The kind is part of the key: an instance and a network of one name are two subjects.
              key: (event) => `${event.kind}/${event.project}/${event.name}`,
              window: config.debounceWindow,
              collapsible: (event) => chainWarm && event.status === 'ok' && wanted.get(event.action)?.debounce === true,
              superseded: (event) => withDropped(event, 'debounce'),
              scheduler,
            }),
          )
        : decoded$;

    const finish = (): void => {
      writeIfDirty();
      finalWrite.then(resolveStopped, resolveStopped);
      ready$.next(false);
      ready$.complete();
    };
    subscriber.add(
      collapsed$.subscribe({
        next: (event) => {
          if (event.status === 'dropped') metrics.eventsDropped.labels('debounce').inc();
          else owner.post(() => owner.accept(event));
        },
        complete: () => owner.post(() => owner.drain()),
        error: (error: unknown) => {
          logger.error({ err: error }, 'the event stream failed: handing on what is held');
          owner.post(() => owner.drain());
        },
      }),
    );
    // After a drain or an unsubscribe alike: the owner is stopped, so the last snapshot is taken
    // directly rather than through its inbox.
    subscriber.add(() => {
      owner.stop();
      finish();
    });
    updateReady();
  });

  return {
    events$,
    ready$: ready$.pipe(distinctUntilChanged()),
    status: () => {
      const sizes = core?.sizes() ?? { projects: 0, instances: 0, networks: 0 };
      return { connected, warm: core?.warm === true, ready: connected && core?.warm === true, line: core?.lineLength ?? 0, ...sizes };
    },
    drain: () => drain$.next(),
    stopped,
  };
}
