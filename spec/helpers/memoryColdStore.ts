import { ColdStore, ColdStoreHooks, OpenColdStore } from '../../lib/enricher/coldStore/coldStore';
import { ColdStoreDocument } from '../../lib/enricher/coldStore/coldStoreDocument';

/** A cold store in memory, for specs and benches. */
export interface MemoryColdStore extends ColdStore {
  /** Every document written, in order (not those whose write failed). */
  readonly saved: ColdStoreDocument[];
  /** Every write asked for, failed or not. */
  attempts: number;
  /** How many of the next writes fail (with `ENOSPC`, as a full disk would) before one lands. */
  failNext: number;
  /** Opens it with the enricher's hooks: pass `store.open` as `createEnricher`'s `store`. */
  readonly open: OpenColdStore;
}

/**
 * A cold store in memory that answers at once: each write's outcome goes to `onWrite`
 * synchronously, inside `save`, so the enricher's reaction to it runs in virtual time.
 */
export function memoryColdStore(initial?: ColdStoreDocument): MemoryColdStore {
  let hooks: ColdStoreHooks | undefined;
  const store: MemoryColdStore = {
    saved: [],
    attempts: 0,
    failNext: 0,
    open(given) {
      hooks = given;
      return store;
    },
    load: () => initial,
    save(document) {
      store.attempts++;
      if (store.failNext > 0) {
        store.failNext--;
        hooks?.onWrite(false, Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
      } else {
        store.saved.push(document);
        hooks?.onWrite(true);
      }
      return Promise.resolve();
    },
  };
  return store;
}
