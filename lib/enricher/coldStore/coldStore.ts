/**
 * What the enricher asks of a cold store. The file behind it is in streams/coldStoreFile.ts, where
 * file I/O lives.
 */
import { Logger } from '../../logger';
import { ColdStoreDocument } from './coldStoreDocument';

/** The cold store file's name inside the data directory (the upstream name). */
export const COLD_STORE_FILE = 'enricher-cold-store.json';

/** Somewhere to keep the model between runs. */
export interface ColdStore {
  /** What the last run stored, or `undefined` when there is nothing usable (a problem is logged, never thrown). */
  load(): ColdStoreDocument | undefined;
  /**
   * Stores `document`. Writes never overlap; a document offered while one is being written
   * replaces any older one still waiting, so only the newest is written next. Resolves when this
   * document (or a newer one) has been written or has failed; never rejects: the outcome of each
   * write, with the error of a failed one, goes to `onWrite` (the enricher logs and retries it).
   */
  save(document: ColdStoreDocument): Promise<void>;
}

/** What the enricher gives the cold store it opens: its logger, and where each write's outcome goes. */
export interface ColdStoreHooks {
  /** For what loading finds wrong; a failed write is not logged here but reported to `onWrite`. */
  logger: Logger;
  /**
   * Told the outcome of every write, once per write and in order, with the error when it failed
   * (the enricher counts it, logs it once and retries). A store that reports nothing is taken to
   * have written each document once its `save` resolves, and is never retried.
   */
  onWrite: (ok: boolean, error?: unknown) => void;
}

/** Opens a cold store with the enricher's hooks (the daemon passes the file store's). */
export type OpenColdStore = (hooks: ColdStoreHooks) => ColdStore;
