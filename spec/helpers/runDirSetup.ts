import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Jest global setup: one scratch directory for the whole run, for what is costly to make and the
 * same for every suite (the LXD test image). Suites find it in `RXFLEET_RUN_DIR`; the global
 * teardown removes it.
 */
export default function runDirSetup(): void {
  process.env.RXFLEET_RUN_DIR = mkdtempSync(join(tmpdir(), 'rxfleet-run-'));
}
