import { rmSync } from 'node:fs';

/** Jest global teardown: removes the run's scratch directory (see runDirSetup). */
export default function runDirTeardown(): void {
  const dir = process.env.RXFLEET_RUN_DIR;
  if (dir !== undefined && dir.includes('rxfleet-run-')) rmSync(dir, { recursive: true, force: true });
}
