/**
 * The enricher pipeline, top to bottom: Incus events merged with the round's invented events,
 * debounced per subject, routed, read (one read per subject, superseding) into the one model,
 * released on the ring in arrival order, passed through the archive, handed on.
 */
import {
  BehaviorSubject,
  EMPTY,
  Observable,
  SchedulerLike,
  Subject,
  asyncScheduler,
  catchError,
  connect,
  distinctUntilChanged,
  filter,
  ignoreElements,
  merge,
  takeUntil,
  tap,
} from 'rxjs';
import { Registry } from 'prom-client';
import { IncusReader, IncusStreamItem } from '../../incus/api';
import { Logger, silentLogger } from '../../logger';
import { Archive } from './Archive';
import { OpenColdStore } from '../coldStore/coldStore';
import { ColdStoreDocument, modelFromSnapshot } from '../coldStore/coldStoreDocument';
import { ColdStoreWriter } from '../coldStore/coldStoreWriter';
import { EnricherSettings } from '../config/config';
import { EnrichedEvent, newEvent, withInstance } from '../model/event';
import { FleetModel } from '../model/FleetModel';
import { OwnerNotice, fleetOwner, isLineEntry, isOwnerNotice } from '../owner/fleetOwner';
import { EnricherMetrics } from '../metrics/metrics';
import { ObservableIncusReader, timedReader } from '../reads/observableReader';
import { attachProject } from '../owner/route';
import { Ladder } from '../owner/repairs';
import { RoundEnd } from '../rounds/roundFeed';
import { archiveFilter, debounceSubjects, incusAndRounds, releaseLine } from './stages';
import { overlayTold, toldArchive } from './toldSeed';
import { WantedTable, daemonWanted } from '../model/wanted';

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
   * exactly these instances (`toldSeed.ts`). Default none: the cold store alone.
   */
  told?: readonly EnrichedEvent[];
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
  /** Instances last read running with a NIC and no address (read again, backing off). */
  awaitingAddress: number;
  /**
   * The cold store: `off` (none configured), `ok`, or `stale` from a failed write until a retry
   * lands. A stale store does not make the enricher unready: events still flow; only a restart
   * would start from an older model.
   */
  coldStore: 'off' | 'ok' | 'stale';
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

  const drain$ = new Subject<void>();
  const ready$ = new BehaviorSubject(false);
  let model = new FleetModel();
  const store =
    deps.store === undefined
      ? undefined
      : new ColdStoreWriter({ open: deps.store, model: () => model, interval: config.storeInterval, scheduler, logger, metrics });
  let connected = false;
  let warm = false;
  let awaitingAddress = 0;
  let line = 0;
  // Feedback, as a stream: debounce (upstream) collapses only once a round has ended since the
  // last connect (upstream's "chain warm"), which the owner (downstream) says. Before that, what
  // the stream says may be all there is to go on.
  const chainWarm$ = new BehaviorSubject(false);
  let started = false;
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  const updateReady = (): void => ready$.next(connected && warm);

  const connection = (up: boolean): void => {
    connected = up;
    if (!up) chainWarm$.next(false);
    metrics.connected.set(up ? 1 : 0);
    if (up) logger.info('event stream connected');
    updateReady();
  };
  const roundEnded = (end: RoundEnd): void => {
    metrics.sweeps.labels(end.ok ? 'success' : 'failed').inc();
    if (end.ok)
      logger.info(
        { round: end.round, projects: model.projectCount, instances: model.instanceCount, networks: model.networkCount },
        'round over the fleet done',
      );
    else logger.warn({ round: end.round, err: end.error }, 'round over the fleet failed: retrying soon');
    if (end.ok && connected) chainWarm$.next(true);
  };
  // What the owner says besides its entries: the daemon's state, and the chain's warmth.
  const noticed = (notice: OwnerNotice): void => {
    if (notice.kind === 'round-end') roundEnded(notice);
    else if (notice.kind === 'awaiting-address') awaitingAddress = notice.instances;
    else {
      warm = true;
      metrics.warm.set(1);
      updateReady();
    }
  };

  // The pipeline itself, top to bottom. `model` and `warm` start from the cold store (E1).
  const run = (initial: ColdStoreDocument | undefined): Observable<EnrichedEvent> => {
    model = initial !== undefined ? modelFromSnapshot(initial) : new FleetModel();
    warm = initial !== undefined;
    const { told } = deps;
    if (told !== undefined) {
      overlayTold(model, told);
      warm ||= told.some((event) => event.instance !== undefined);
    }
    metrics.warm.set(warm ? 1 : 0);
    const archive = told !== undefined ? toldArchive(told, config.instances.mode !== 'all') : seededArchive(model);
    const reader = timedReader(deps.reader, {
      readTimeout: config.readTimeout,
      scheduler,
      onRead: (kind, outcome, ms) => metrics.read(kind, outcome, ms),
    });
    return deps.events$.pipe(
      catchError((error: unknown) => {
        logger.error({ err: error }, 'the event stream failed: handing on what is held');
        return EMPTY;
      }),
      takeUntil(drain$),
      // Incus events merged with the rounds' invented events,
      incusAndRounds(
        { wanted, scheduler, metrics, logger, onConnection: connection },
        { reader, view: model, delay: config.readDelay, interval: config.sweepInterval, scheduler },
      ),
      // debounced per subject (collapsing once a round has ended since the last connect),
      debounceSubjects({ window: config.debounceWindow, wanted, warm$: chainWarm$, metrics, scheduler }),
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
        ...(deps.repairs !== undefined ? { repairs: deps.repairs } : {}),
      }),
      connect((owned$) =>
        merge(
          // its notices kept as the daemon's state (and fed back to the debounce),
          owned$.pipe(filter(isOwnerNotice), tap(noticed), ignoreElements()),
          owned$.pipe(
            filter(isLineEntry),
            // its entries released in arrival order on the ring,
            releaseLine((length) => metrics.lineLength.set((line = length))),
            // and what says nothing new, is older than what was sent, or is not served goes nowhere.
            archiveFilter(archive, metrics),
          ),
        ),
      ),
    );
  };

  // Seeded as what was last said about each instance, so the first round's reads of an unchanged
  // fleet are silent rather than a restart re-announcing every instance.
  const seededArchive = (held: FleetModel): Archive => {
    const archive = new Archive(config.instances.mode !== 'all');
    const view = { model: held, wanted, projects: config.projects, instances: config.instances, unserved: new Set<string>() };
    for (const [at, record] of held.instances()) {
      archive.file(
        attachProject(
          view,
          withInstance(newEvent({ action: 'instance-updated', ...at, origin: 'round', received: scheduler.now() }), record),
        ),
      );
    }
    return archive;
  };

  const events$ = new Observable<EnrichedEvent>((subscriber) => {
    if (started) {
      subscriber.error(new Error('an enricher runs once: subscribe to events$ a single time'));
      return;
    }
    started = true;
    const initial = store?.load();
    if (initial !== undefined) logger.info('cold store loaded: serving what the last run held until the first round corrects it');
    const pipeline = run(initial);
    store?.start();
    subscriber.add(pipeline.subscribe(subscriber));
    updateReady();
    // After a drain or an unsubscribe alike: the last write (also after failed ones), then the
    // rest of the way down.
    subscriber.add(() => {
      (store?.close() ?? Promise.resolve()).then(resolveStopped, resolveStopped);
      line = 0;
      metrics.lineLength.set(0);
      ready$.next(false);
      ready$.complete();
      chainWarm$.complete();
    });
  });

  return {
    events$,
    ready$: ready$.pipe(distinctUntilChanged()),
    status: () => ({
      connected,
      warm,
      ready: connected && warm,
      line,
      projects: model.projectCount,
      instances: model.instanceCount,
      networks: model.networkCount,
      awaitingAddress,
      coldStore: store === undefined ? 'off' : store.stale ? 'stale' : 'ok',
    }),
    drain: () => drain$.next(),
    stopped,
  };
}
