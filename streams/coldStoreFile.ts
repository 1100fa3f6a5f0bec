/**
 * The enricher's cold store as a file, written atomically (a temporary file, then a rename) with
 * mode 0600.
 */
import { readFileSync } from 'node:fs';
import { chmod, rename, unlink, writeFile } from 'node:fs/promises';
import { Logger, silentLogger } from '../lib/logger';
import { ColdStore } from '../lib/enricher/coldStore/coldStore';
import { ColdStoreDocument, coldStoreProblem } from '../lib/enricher/coldStore/coldStoreDocument';

/** Options for {@link fileColdStore}. */
export interface FileColdStoreOptions {
  /** For a store that cannot be read back (default silent). */
  logger?: Logger;
  /**
   * Told the outcome of every write, with the error of a failed one. A failed write is not logged
   * here: the enricher logs it once and retries with backoff (`lib/enricher/coldStore/coldStoreWriter.ts`).
   */
  onWrite?: (ok: boolean, error?: unknown) => void;
}

/**
 * A cold store in the file at `path`. Loading reads it synchronously (once, at start, before
 * anything is served); writing goes to `path + ".tmp"` created with mode 0600, then renames it over
 * `path`, so a crash mid-write leaves the previous file whole and nobody but the owner can read
 * what the fleet looks like. A write that fails (a full disk, a read-only or missing directory)
 * removes its temporary file and is reported to `onWrite`; nothing is retried here.
 */
export function fileColdStore(path: string, options: FileColdStoreOptions = {}): ColdStore {
  const { logger = silentLogger, onWrite } = options;
  let writing: Promise<void> | undefined;
  let next: { document: ColdStoreDocument; waiters: Array<() => void> } | undefined;

  const writeOnce = async (document: ColdStoreDocument): Promise<void> => {
    const tmp = `${path}.tmp`;
    try {
      await writeFile(tmp, JSON.stringify(document), { mode: 0o600 });
      // The mode given to writeFile only applies when the file is created: a leftover tmp file
      // from an older run keeps whatever it had.
      await chmod(tmp, 0o600);
      await rename(tmp, path);
      onWrite?.(true);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      onWrite?.(false, error);
    }
  };

  const pump = (): void => {
    if (writing !== undefined || next === undefined) return;
    const { document, waiters } = next;
    next = undefined;
    writing = writeOnce(document).finally(() => {
      writing = undefined;
      for (const resolve of waiters) resolve();
      pump();
    });
  };

  return {
    load() {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
          logger.warn({ err: error, path }, 'reading the cold store failed: starting cold');
        return undefined;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        logger.warn({ path, reason: (error as Error).message }, 'the cold store is not JSON: starting cold');
        return undefined;
      }
      const problem = coldStoreProblem(parsed);
      if (problem !== undefined) {
        logger.warn({ path, problem }, 'the cold store does not match its schema: starting cold');
        return undefined;
      }
      return parsed as ColdStoreDocument;
    },
    save(document) {
      return new Promise<void>((resolve) => {
        const waiters = next?.waiters ?? [];
        waiters.push(resolve);
        next = { document, waiters };
        pump();
      });
    },
  };
}
