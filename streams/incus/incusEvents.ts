import { Observable, SchedulerAction, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { Counter, Gauge, Registry } from 'prom-client';
import { IncusStreamItem } from '../../lib/incus/api';
import { decodeLifecycle } from '../../lib/incus/decodeLifecycle';
import { Logger, silentLogger } from '../../lib/logger';
import { RateLimitedLog } from '../../lib/rateLimitedLog';
import { EventSocket, EventSocketOpener, wsEventSocket } from './eventSocket';
import { IncusEndpoint, IncusEndpointOptions, toEndpoint } from './incusEndpoint';
import { definedFields } from '../../lib/definedFields';

/** Options for {@link incusEvents}. */
export interface IncusEventsOptions {
  /** The server (an endpoint, or what makes one). Default: the local socket. */
  endpoint?: IncusEndpoint | IncusEndpointOptions;
  /**
   * The event types asked for. Default `lifecycle`: the stream decodes lifecycle events only, and
   * counts any other type that arrives as ignored.
   */
  types?: string[];
  /** Listen to every project the credentials may see (`all-projects=true`). Default true. */
  allProjects?: boolean;
  /** With `allProjects: false`, the one project listened to. Default: the server's default. */
  project?: string;
  /**
   * A session that receives no frame, ping or pong for this long is taken for dead (a half-open
   * socket) and ended; an attempt whose handshake takes this long is abandoned. Default 30 s.
   */
  readDeadlineMs?: number;
  /** How often the client pings an open session (the pong keeps it alive). Default 10 s. */
  pingIntervalMs?: number;
  /** The first wait before reconnecting; it doubles up to `backoffMaxMs`. Default 1 s. */
  backoffInitialMs?: number;
  /** The longest wait between attempts. Default 60 s. */
  backoffMaxMs?: number;
  /** A longer frame ends the session. Default 1 MiB. */
  maxFrameBytes?: number;
  /** Malformed frames logged in full per minute before one summary line takes over. Default 5. */
  malformedLogBurst?: number;
  /** Where the backoff, the pings and the deadline are timed. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  logger?: Logger;
  /** Where the `incus_events_*` metrics are registered. Default: a private registry. */
  registry?: Registry;
  /** Opens one websocket per session. Default: `ws` through the endpoint. Specs pass a fake. */
  openSocket?: EventSocketOpener;
}

/** The events endpoint path and query for these options. */
export function eventsPath(options: Pick<IncusEventsOptions, 'types' | 'allProjects' | 'project'> = {}): string {
  const { types = ['lifecycle'], allProjects = true, project } = options;
  const query = new URLSearchParams({ type: types.join(',') });
  if (allProjects) query.set('all-projects', 'true');
  else if (project !== undefined) query.set('project', project);
  return `/1.0/events?${query.toString()}`;
}

interface EventMetrics {
  frames: Counter<'result'>;
  attempts: Counter<'result'>;
  connected: Gauge;
}

function eventMetrics(registry: Registry): EventMetrics {
  const existing = <T>(name: string): T | undefined => registry.getSingleMetric(name) as T | undefined;
  const frames =
    existing<Counter<'result'>>('incus_events_frames_total') ??
    new Counter({
      name: 'incus_events_frames_total',
      help: 'Frames received on the Incus events websocket, by result (event, ignored, malformed)',
      labelNames: ['result'],
      registers: [registry],
    });
  const attempts =
    existing<Counter<'result'>>('incus_events_connects_total') ??
    new Counter({
      name: 'incus_events_connects_total',
      help: 'Attempts to open the Incus events websocket, by result (opened, failed)',
      labelNames: ['result'],
      registers: [registry],
    });
  const connected =
    existing<Gauge>('incus_events_connected') ??
    new Gauge({ name: 'incus_events_connected', help: '1 while the Incus events websocket is open', registers: [registry] });
  for (const result of ['event', 'ignored', 'malformed']) frames.inc({ result }, 0);
  for (const result of ['opened', 'failed']) attempts.inc({ result }, 0);
  return { frames, attempts, connected };
}

/**
 * The server's lifecycle events as an endless stream of {@link IncusStreamItem}s, over one
 * websocket at a time (`/1.0/events?type=lifecycle&all-projects=true`), reopened whenever it ends.
 *
 * ```
 * backoff 1 s .. 60 s; c = connected, e = event, d = disconnected, x = attempt failed (not emitted)
 * server: [open]-e-e-[drops] ---1s--- x ---2s--- x ---4s--- [open]-e ...
 * result:  c    -e-e- d                                       c    -e ...
 * ```
 *
 * Semantics:
 * - Subscribing opens the first websocket at once. `connected` is emitted when its handshake
 *   completes, then one `event` per lifecycle frame and one `malformed` per frame that is not what
 *   a server sends (both shapes of E9 are decoded; other event types and empty actions are counted
 *   as ignored and not emitted), then `disconnected` with the reason when the session ends.
 *   `connected` and `disconnected` strictly alternate; events only arrive between them. Every
 *   malformed frame is counted (`incus_events_frames_total{result="malformed"}`) and emitted; the
 *   log shows the first few of each minute and then one summary line, so a flood stays readable.
 * - Any end is followed by a new attempt: the first after `backoffInitialMs`, each further one
 *   after twice the wait before, at most `backoffMaxMs`. The wait goes back to `backoffInitialMs`
 *   only when a session actually opened. A failed attempt is logged and counted, not emitted.
 * - The client pings every `pingIntervalMs`. A session with no frame, ping or pong for
 *   `readDeadlineMs` is ended as half-open (`disconnected`, then reconnect); an attempt whose
 *   handshake does not complete within `readDeadlineMs` is abandoned as failed.
 * - It never errors and never completes. Unsubscribing closes the websocket and cancels every
 *   timer it armed.
 *
 * @example Log every event of every project
 * ```ts
 * incusEvents({ endpoint: { url: '/var/lib/lxd/unix.socket' } }).subscribe((item) => console.log(item));
 * ```
 */
export function incusEvents(options: IncusEventsOptions = {}): Observable<IncusStreamItem> {
  const {
    readDeadlineMs = 30_000,
    pingIntervalMs = 10_000,
    backoffInitialMs = 1000,
    backoffMaxMs = 60_000,
    maxFrameBytes = 1024 * 1024,
    scheduler = asyncScheduler,
    logger = silentLogger,
  } = options;
  const metrics = eventMetrics(options.registry ?? new Registry());
  const endpoint = options.openSocket === undefined ? toEndpoint(options.endpoint) : undefined;
  const opener = options.openSocket ?? wsEventSocket(endpoint as IncusEndpoint, { path: eventsPath(options), maxFrameBytes });
  const where = endpoint?.address ?? 'injected socket';

  return new Observable<IncusStreamItem>((subscriber) => {
    const malformedLog = new RateLimitedLog({
      logger,
      scheduler,
      ...definedFields({ burst: options.malformedLogBurst }),
    });
    let socket: EventSocket | undefined;
    // One timer of each kind at most, each rescheduling itself, so a long session arms nothing new.
    let handshakeTimer: Subscription | undefined;
    let keepaliveTimers: Subscription | undefined;
    let reconnectTimer: Subscription | undefined;
    let nextWait = backoffInitialMs;
    let lastHeard = 0;
    // Bumped whenever a socket is given up, so its late callbacks are recognised and ignored.
    let attempt = 0;

    const stopTimers = (): void => {
      handshakeTimer?.unsubscribe();
      keepaliveTimers?.unsubscribe();
      handshakeTimer = keepaliveTimers = undefined;
    };

    const attemptOnce = (): void => {
      reconnectTimer?.unsubscribe();
      reconnectTimer = undefined;
      attempt += 1;
      const thisAttempt = attempt;
      let opened = false;
      const current = (): boolean => attempt === thisAttempt && !subscriber.closed;

      const end = (reason: string): void => {
        if (!current()) return;
        attempt += 1;
        stopTimers();
        socket = undefined;
        if (opened) {
          metrics.connected.set(0);
          logger.warn({ incus: where, reason }, 'incus events session ended');
          subscriber.next({ kind: 'disconnected', reason });
        } else {
          metrics.attempts.inc({ result: 'failed' });
          logger.warn({ incus: where, reason, retryInMs: nextWait }, 'incus events: could not connect');
        }
        const wait = nextWait;
        nextWait = Math.min(nextWait * 2, backoffMaxMs);
        if (!subscriber.closed) reconnectTimer = scheduler.schedule(attemptOnce, wait);
      };

      const giveUp = (reason: string): void => {
        socket?.terminate();
        end(reason);
      };

      handshakeTimer = scheduler.schedule(() => giveUp(`no handshake within ${readDeadlineMs} ms`), readDeadlineMs);

      const opening = opener({
        open: () => {
          if (!current() || opened) return;
          opened = true;
          nextWait = backoffInitialMs;
          handshakeTimer?.unsubscribe();
          lastHeard = scheduler.now();
          keepaliveTimers = keepAlive(
            scheduler,
            { readDeadlineMs, pingIntervalMs },
            {
              lastHeard: () => lastHeard,
              ping: () => socket?.ping(),
              silent: () => giveUp(`no frame, ping or pong for ${readDeadlineMs} ms (half-open connection)`),
            },
          );
          metrics.attempts.inc({ result: 'opened' });
          metrics.connected.set(1);
          logger.info({ incus: where }, 'incus events session open');
          subscriber.next({ kind: 'connected' });
        },
        frame: (text) => {
          if (!current() || !opened) return;
          lastHeard = scheduler.now();
          const item = readFrame(text, { metrics, malformedLog, logger, where });
          if (item !== undefined) subscriber.next(item);
        },
        alive: () => {
          if (current()) lastHeard = scheduler.now();
        },
        closed: (reason) => end(reason),
      });
      // An opener may fail (or even open) before it returns; only a live attempt keeps its socket.
      if (current()) socket = opening;
    };

    attemptOnce();

    return () => {
      attempt += 1;
      stopTimers();
      reconnectTimer?.unsubscribe();
      malformedLog.close();
      if (socket !== undefined) {
        metrics.connected.set(0);
        socket.terminate();
        socket = undefined;
      }
    };
  });
}

/**
 * The timers that keep an open session honest: a ping every `pingIntervalMs`, and `silent` once
 * nothing (frame, ping or pong) has been heard for `readDeadlineMs` since `lastHeard()`. One timer
 * of each kind, each rescheduling itself; unsubscribing the result stops both.
 */
function keepAlive(
  scheduler: SchedulerLike,
  { readDeadlineMs, pingIntervalMs }: { readDeadlineMs: number; pingIntervalMs: number },
  session: { lastHeard: () => number; ping: () => void; silent: () => void },
): Subscription {
  const timers = new Subscription();
  timers.add(
    scheduler.schedule(function (this: SchedulerAction<unknown>) {
      const silentFor = scheduler.now() - session.lastHeard();
      if (silentFor >= readDeadlineMs) session.silent();
      else this.schedule(undefined, readDeadlineMs - silentFor);
    }, readDeadlineMs),
  );
  timers.add(
    scheduler.schedule(function (this: SchedulerAction<unknown>) {
      session.ping();
      this.schedule(undefined, pingIntervalMs);
    }, pingIntervalMs),
  );
  return timers;
}

/**
 * What one frame of an open session says, counted by result: an event or a malformed frame to emit
 * (a malformed one logged, the log thinned by `malformedLog`), or nothing for another event type
 * or an empty action (logged at debug).
 */
function readFrame(
  text: string,
  report: { metrics: EventMetrics; malformedLog: RateLimitedLog; logger: Logger; where: string },
): IncusStreamItem | undefined {
  const decoding = decodeLifecycle(text);
  report.metrics.frames.inc({ result: decoding.kind });
  if (decoding.kind === 'event') return { kind: 'event', event: decoding.event };
  if (decoding.kind === 'malformed') {
    report.malformedLog.log('incus_frame', { incus: report.where, reason: decoding.reason }, 'incus events: malformed frame');
    return { kind: 'malformed', reason: decoding.reason };
  }
  report.logger.debug({ reason: decoding.reason }, 'incus events: frame ignored');
  return undefined;
}
