/**
 * When the enricher writes its cold store (E1): every `store_interval` while the model changed,
 * again with backoff after a write that failed, and once more on the way out.
 */
import { SchedulerLike, Subscription, interval } from 'rxjs';
import { Logger } from '../../logger';
import { ColdStore, OpenColdStore } from './coldStore';
import { ColdStoreDocument, snapshotModel } from './coldStoreDocument';
import { FleetModel } from '../model/FleetModel';
import { EnricherMetrics } from '../metrics/metrics';

/** The wait before a failed write is tried again, ms; it doubles with each failure in a row. */
export const STORE_RETRY_FIRST_MS = 1000;
/** The longest wait between retries, ms (or `store_interval`, when that is longer). */
export const STORE_RETRY_MAX_MS = 60_000;

/** Options for {@link ColdStoreWriter}. */
export interface ColdStoreWriterConfig {
  /** Opens the store with the writer's hooks (once, in the constructor). */
  readonly open: OpenColdStore;
  /** The model to write: a getter, since the enricher builds it when it starts. */
  readonly model: () => FleetModel;
  /** `store_interval`, ms. */
  readonly interval: number;
  readonly scheduler: SchedulerLike;
  readonly logger: Logger;
  readonly metrics: EnricherMetrics;
}

/**
 * Keeps the cold store as close behind the model as `store_interval` allows, whatever the disk
 * does.
 *
 * - Every `interval` a model that changed (`dirty`) is written, one write at a time: a tick while
 *   a write is under way waits for the next tick.
 * - A write that fails leaves the model dirty (what it carried never landed) and is tried again
 *   after 1 s, 2 s, 4 s ... at most 60 s apart (or `interval` apart, when that is longer), with the
 *   newest model each time; the ticks wait meanwhile. Without this, a disk that filled up and was
 *   freed again would see nothing written until an instance changed, and the last write on the way
 *   out would be skipped as "nothing new".
 * - Each failed write is one error line (so a full disk costs at most a line a minute once the
 *   retries have backed off), each counted in `enricher_store_writes_total{result="failed"}`; from
 *   the first failure to the next write that lands the store is **stale** (`stale`,
 *   `enricher_store_stale` 1), and `enricher_store_last_success_timestamp_seconds` says since when.
 * - {@link close} stops the ticks and the retries and writes once more if anything is not on disk
 *   yet: the model changed, the last write failed, or a write is still under way (and may fail).
 *
 * The times are on the injected scheduler, so the schedule is tested in virtual time.
 */
export class ColdStoreWriter {
  private readonly config: ColdStoreWriterConfig;
  private readonly store: ColdStore;
  private readonly maxWait: number;
  private ticks: Subscription | undefined;
  private retry: Subscription | undefined;
  private writing = false;
  private saves = 0;
  private failures = 0;
  private wait = 0;
  private closing = false;
  private last: Promise<void> = Promise.resolve();

  constructor(config: ColdStoreWriterConfig) {
    this.config = config;
    this.maxWait = Math.max(STORE_RETRY_MAX_MS, config.interval);
    this.store = config.open({ logger: config.logger, onWrite: (ok, error) => this.reported(ok, error) });
  }

  /** What the last run stored, or `undefined` (the store logs why). */
  load(): ColdStoreDocument | undefined {
    return this.store.load();
  }

  /** Starts the ticks. */
  start(): void {
    if (this.closing || this.ticks !== undefined) return;
    this.ticks = interval(this.config.interval, this.config.scheduler).subscribe(() => {
      if (!this.writing && this.failures === 0 && this.config.model().dirty) this.write();
    });
  }

  /** The last write failed and none has landed since. */
  get stale(): boolean {
    return this.failures > 0;
  }

  /**
   * Stops the ticks and retries, writes a last time if the store may be behind the model, and
   * resolves when that write is done (or failed). Never rejects; safe to call more than once.
   */
  close(): Promise<void> {
    if (this.closing) return this.last;
    this.closing = true;
    this.ticks?.unsubscribe();
    this.retry?.unsubscribe();
    this.retry = undefined;
    if (this.config.model().dirty || this.failures > 0 || this.writing) this.write();
    return this.last;
  }

  private write(): void {
    const model = this.config.model();
    model.dirty = false;
    this.writing = true;
    const save = ++this.saves;
    this.last = this.store.save(snapshotModel(model)).then(() => {
      // A store that reports nothing is taken to have written it.
      if (save === this.saves) this.writing = false;
    });
  }

  private reported(ok: boolean, error: unknown): void {
    const { metrics, logger, scheduler } = this.config;
    this.writing = false;
    metrics.storeWrites.labels(ok ? 'ok' : 'failed').inc();
    if (ok) {
      if (this.failures > 0) logger.info({ failures: this.failures }, 'cold store written again after failed writes');
      this.failures = 0;
      this.retry?.unsubscribe();
      this.retry = undefined;
      metrics.storeStale.set(0);
      metrics.storeLastSuccess.set(scheduler.now() / 1000);
      return;
    }
    this.failures++;
    // What this write carried never landed: the model is ahead of the store until one does.
    this.config.model().dirty = true;
    metrics.storeStale.set(1);
    if (this.closing) {
      logger.error(
        { err: error, failures: this.failures },
        'writing the cold store failed on the way out: the next start reads the last one written',
      );
      return;
    }
    this.wait = this.failures === 1 ? STORE_RETRY_FIRST_MS : Math.min(this.wait * 2, this.maxWait);
    logger.error(
      { err: error, failures: this.failures, retryInMs: this.wait },
      'writing the cold store failed: it is stale until a retry lands',
    );
    this.retry?.unsubscribe();
    this.retry = scheduler.schedule(() => {
      this.retry = undefined;
      if (!this.closing) this.write();
    }, this.wait);
  }
}
