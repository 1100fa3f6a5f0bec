/**
 * The enricher pipeline, top to bottom: Incus events merged with the round's invented events,
 * debounced per subject, routed, read (one read per subject, superseding) into the one model,
 * released on the ring in arrival order, passed through the archive, handed on.
 */
import { Observable, SchedulerLike, Subject, asyncScheduler, connect, filter, ignoreElements, merge, takeUntil, tap } from 'rxjs';
import { Registry } from 'prom-client';
import { IncusReader, IncusStreamItem } from '../../incus/api';
import { Logger, silentLogger } from '../../logger';
import { OpenColdStore } from '../coldStore/coldStore';
import { ColdStoreWriter } from '../coldStore/coldStoreWriter';
import { EnricherSettings } from '../config/config';
import { EnricherMetrics } from '../metrics/metrics';
import { EnrichedEvent } from '../model/event';
import { FleetModel } from '../model/FleetModel';
import { WantedTable, daemonWanted } from '../model/wanted';
import { fleetOwner, isLineEntry, isOwnerNotice } from '../owner/fleetOwner';
import { Ladder } from '../owner/repairs';
import { ObservableIncusReader, timedReader } from '../reads/observableReader';
import { EnricherState, EnricherStatus } from './enricherState';
import { archiveFilter, debounceSubjects, endOnStreamError, incusAndRounds, isConnectionMark, releaseLine } from './stages';
import { StartingPoint, startingPoint } from './startingPoint';

export type { EnricherStatus } from './enricherState';

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
  /** The repair ladders (for specs and benches); default as documented (`Repairs`). */
  repairs?: { failures?: Ladder; addresses?: Ladder };
  /**
   * What consumers were last told about each instance (the stream and the state bucket, read
   * back): the archive starts from these events instead of the cold store, and the model holds
   * exactly these instances (`startingPoint.ts`). Default none: the cold store alone.
   */
  told?: readonly EnrichedEvent[];
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
  const logger = deps.logger ?? silentLogger;
  const scheduler = deps.scheduler ?? asyncScheduler;
  const parts: Parts = {
    ...deps,
    logger,
    scheduler,
    metrics: new EnricherMetrics(deps.registry),
    wanted: deps.wanted ?? daemonWanted(deps.config.wants),
  };
  const { config, metrics, wanted } = parts;
  const drain$ = new Subject<void>();
  let model = new FleetModel();
  const state = new EnricherState(metrics, logger, () => model);
  const store =
    deps.store === undefined
      ? undefined
      : new ColdStoreWriter({ open: deps.store, model: () => model, interval: config.storeInterval, scheduler, logger, metrics });
  let started = false;
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));

  const events$ = new Observable<EnrichedEvent>((subscriber) => {
    if (started) {
      subscriber.error(new Error('an enricher runs once: subscribe to events$ a single time'));
      return;
    }
    started = true;
    const initial = store?.load();
    if (initial !== undefined) logger.info('cold store loaded: serving what the last run held until the first round corrects it');
    const start = startingPoint(initial, deps.told, {
      wanted,
      projects: config.projects,
      instances: config.instances,
      now: scheduler.now(),
    });
    model = start.model;
    state.start(start.warm);
    const pipeline = enricherPipeline(parts, start, state, drain$);
    store?.start();
    subscriber.add(pipeline.subscribe(subscriber));
    state.tellReady();
    // After a drain or an unsubscribe alike: the last write (also after failed ones), then the
    // rest of the way down.
    subscriber.add(() => {
      (store?.close() ?? Promise.resolve()).then(resolveStopped, resolveStopped);
      state.end();
    });
  });

  return {
    events$,
    ready$: state.ready$,
    status: () => state.status(store === undefined ? 'off' : store.stale ? 'stale' : 'ok'),
    drain: () => drain$.next(),
    stopped,
  };
}

/** What the pipeline is built from, its defaults resolved. */
interface Parts extends EnricherDeps {
  readonly logger: Logger;
  readonly scheduler: SchedulerLike;
  readonly metrics: EnricherMetrics;
  readonly wanted: WantedTable;
}

/** The pipeline itself, top to bottom, from where the run starts (the model and its warmth, E1). */
function enricherPipeline(parts: Parts, start: StartingPoint, state: EnricherState, drain$: Observable<void>): Observable<EnrichedEvent> {
  const { config, wanted, scheduler, logger, metrics } = parts;
  const { model, warm, archive } = start;
  const reader = timedReader(parts.reader, {
    readTimeout: config.readTimeout,
    scheduler,
    onRead: (kind, outcome, ms) => metrics.read(kind, outcome, ms),
  });
  return parts.events$.pipe(
    endOnStreamError(logger),
    takeUntil(drain$),
    // Incus events merged with the rounds' invented events, connects and disconnects marked,
    incusAndRounds(
      { wanted, scheduler, metrics, logger },
      { reader, view: model, delay: config.readDelay, interval: config.sweepInterval, scheduler },
    ),
    // the connection kept as the daemon's state,
    tap((input) => {
      if (isConnectionMark(input)) state.connection(input.connected);
    }),
    // debounced per subject (collapsing once a round has ended since the last connect, as the
    // marks and the rounds' ends say),
    debounceSubjects({ window: config.debounceWindow, wanted, metrics, scheduler }),
    // routed, read once per subject (a stronger read superseding), written into the one model,
    fleetOwner({
      model,
      reader,
      wanted,
      projects: config.projects,
      instances: config.instances,
      workers: config.workers,
      ipTimeout: config.ipTimeout,
      ttl: config.ttl,
      configExclude: config.configExclude,
      warm,
      scheduler,
      logger,
      metrics,
      ...(parts.repairs !== undefined ? { repairs: parts.repairs } : {}),
    }),
    connect((owned$) =>
      merge(
        // its notices kept as the daemon's state,
        owned$.pipe(
          filter(isOwnerNotice),
          tap((notice) => state.notice(notice)),
          ignoreElements(),
        ),
        owned$.pipe(
          filter(isLineEntry),
          // its entries released in arrival order on the ring,
          releaseLine((length) => state.lineLength(length)),
          // and what says nothing new, is older than what was sent, or is not served goes nowhere.
          archiveFilter(archive, metrics),
        ),
      ),
    ),
  );
}
