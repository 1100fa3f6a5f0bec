/**
 * The enricher's terms: one enricher (`createEnricher`) subscribed from the moment the daemon may
 * publish until it stops, or, for a standby, from each election won until it is lost. A term
 * ending by itself (the event stream ended, or a stage threw) ends the daemon.
 */
import { Registry } from 'prom-client';
import { Observable, SchedulerLike, Subscription } from 'rxjs';
import { errorMessage } from '../../lib/choria/errors';
import { IncusReader, IncusStreamItem } from '../../lib/incus/api';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { EnrichedEvent } from '../../lib/enricher/model/event';
import { Enricher, EnricherStatus, createEnricher } from '../../lib/enricher/pipeline/createEnricher';
import { Logger } from '../../lib/logger';
import { fileColdStore } from '../../streams/coldStoreFile';

/** What {@link Terms} runs each enricher with. */
export interface TermParts {
  settings: EnricherSettings;
  logger: Logger;
  registry: Registry;
  scheduler: SchedulerLike | undefined;
  reader: IncusReader;
  /** The Incus event stream, made afresh for each term (a term's end closes its websocket). */
  events$: () => Observable<IncusStreamItem>;
  storeFile: string | undefined;
  /** Every event a term hands on. */
  publish: (event: EnrichedEvent) => void;
  /** A term ended by itself: `failed` says why (the daemon stops). */
  onEnd: (failed: string) => void;
}

interface Term {
  readonly enricher: Enricher;
  readonly subscription: Subscription;
  readonly done: Promise<void>;
  ending: boolean;
}

/** Runs at most one enricher at a time. */
export class Terms {
  private term: Term | undefined;
  private last: EnricherStatus | undefined;

  constructor(private readonly parts: TermParts) {}

  /** Whether an enricher runs. */
  get running(): boolean {
    return this.term !== undefined;
  }

  /** The running enricher's status (the last one's, or a cold one, between terms). */
  status(): EnricherStatus {
    const coldStore = this.parts.storeFile === undefined ? 'off' : 'ok';
    const idle = {
      connected: false,
      warm: false,
      ready: false,
      line: 0,
      projects: 0,
      instances: 0,
      networks: 0,
      awaitingAddress: 0,
      coldStore,
    } as const;
    return this.term?.enricher.status() ?? (this.last === undefined ? idle : { ...this.last, connected: false, ready: false, line: 0 });
  }

  /** Starts a term, seeded with what consumers were told (`undefined`: the cold store alone). */
  begin(told: readonly EnrichedEvent[] | undefined): void {
    if (this.term !== undefined) return;
    const { settings, logger, registry, scheduler, reader, storeFile, publish } = this.parts;
    const enricher = createEnricher({
      events$: this.parts.events$(),
      reader,
      config: settings,
      logger,
      registry,
      store: storeFile === undefined ? undefined : (hooks) => fileColdStore(storeFile, hooks),
      scheduler,
      ...(told !== undefined ? { told } : {}),
    });
    let resolve: () => void = () => undefined;
    const done = new Promise<void>((r) => (resolve = r));
    const term: Term = { enricher, subscription: new Subscription(), done, ending: false };
    this.term = term;
    const ended = (failed: string | undefined): void => {
      resolve();
      if (this.term === term) {
        this.last = enricher.status();
        this.term = undefined;
      }
      if (!term.ending && failed !== undefined) this.parts.onEnd(failed);
    };
    term.subscription.add(
      enricher.events$.subscribe({
        next: publish,
        error: (error: unknown) => {
          logger.error({ err: error }, 'the enricher pipeline failed (a bug): stopping');
          ended(`the enricher pipeline failed: ${errorMessage(error)}`);
        },
        complete: () => {
          if (!term.ending) logger.error('the Incus event stream ended: stopping');
          ended(term.ending ? undefined : 'the Incus event stream ended');
        },
      }),
    );
  }

  /**
   * Ends the term: `drain` hands on the whole line in order and writes the cold store (the daemon's
   * stop, P9); `abandon` drops what is in flight at once (a standby that lost its election).
   * Resolves once the enricher has stopped (its last cold store write done).
   */
  async end(mode: 'drain' | 'abandon'): Promise<void> {
    const term = this.term;
    if (term === undefined) return;
    term.ending = true;
    if (mode === 'drain') {
      term.enricher.drain();
      await term.done;
    } else {
      term.subscription.unsubscribe();
      if (this.term === term) {
        this.last = term.enricher.status();
        this.term = undefined;
      }
    }
    term.subscription.unsubscribe();
    await term.enricher.stopped;
  }
}
