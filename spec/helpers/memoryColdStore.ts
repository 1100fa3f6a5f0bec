import { ColdStore } from '../../lib/enricher/coldStore';
import { ColdStoreDocument } from '../../lib/enricher/coldStoreDocument';

/** A cold store in memory, for specs: `saved` is every document written, in order. */
export function memoryColdStore(initial?: ColdStoreDocument): ColdStore & { readonly saved: ColdStoreDocument[] } {
  const saved: ColdStoreDocument[] = [];
  return {
    saved,
    load: () => initial,
    save(document) {
      saved.push(document);
      return Promise.resolve();
    },
  };
}
