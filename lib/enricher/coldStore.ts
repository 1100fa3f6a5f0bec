/**
 * What the enricher asks of a cold store. The file behind it is in streams/coldStoreFile.ts, where
 * file I/O lives.
 */
import { Logger } from '../logger';
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
   * document (or a newer one) has been written or has failed; never rejects: a failed write is
   * logged and reported through `onWrite`.
   */
  save(document: ColdStoreDocument): Promise<void>;
}

/** What the enricher gives the cold store it opens: its logger, and a counter of writes. */
export interface ColdStoreHooks {
  logger: Logger;
  /** Told the outcome of every write. */
  onWrite: (ok: boolean) => void;
}

/** Opens a cold store with the enricher's hooks (the daemon passes the file store's). */
export type OpenColdStore = (hooks: ColdStoreHooks) => ColdStore;
