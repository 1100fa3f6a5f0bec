import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onCleanUp, sleep, stopProcess } from '../parts/processes';
import { EnrichRig, lxdUnavailable, startEnrichRig } from '../parts/enrichRig';
import { Scenario } from './scenario';

const mount = (...args: string[]): boolean => spawnSync('mount', args, { stdio: 'ignore' }).status === 0;

/** Fills a small filesystem to the last byte. */
function fill(dir: string): void {
  const block = Buffer.alloc(4096, 120);
  for (let i = 0; ; i++) {
    try {
      writeFileSync(join(dir, `filler-${i}`), block);
    } catch {
      return;
    }
  }
}

async function storeFigures(rig: EnrichRig): Promise<Record<string, number>> {
  return { store_writes_ok: await rig.metric('enricher_store_writes_total', { result: 'ok' }), store_writes_failed: await rig.metric('enricher_store_writes_total', { result: 'failed' }) };
}

/**
 * `rxfleet enrich` whose data directory is a full filesystem (a 64 KiB tmpfs filled up), then one
 * that is read-only (remounted ro), while instances change. Goals: the enricher stays up and
 * publishes, and its state converges to LXD's. Reported beside them: store writes that failed,
 * and whether the cold store was written once space came back (DECISIONS: a failed write should
 * be retried; issue 14 item 4). Needs root (mount).
 */
export const dataDirFaults: Scenario = {
  name: 'data-dir',
  description: 'full and read-only data directories',
  async run(env) {
    const unavailable = lxdUnavailable();
    if (unavailable !== undefined) return { skipped: unavailable };
    const rig = await startEnrichRig(env.number('INSTANCES', 2));
    const full = join(rig.dir, 'full');
    const readOnly = join(rig.dir, 'ro');
    mkdirSync(full);
    mkdirSync(readOnly);
    const mounted: string[] = [];
    const unmount = (): void => {
      for (const point of mounted.splice(0).reverse()) spawnSync('umount', ['-l', point], { stdio: 'ignore' });
    };
    const removeCleanUp = onCleanUp(async () => unmount());
    try {
      if (!mount('-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', full)) return { skipped: 'cannot mount a tmpfs (needs root)' };
      mounted.push(full);
      fill(full);
      await rig.startDaemon([], full);
      await rig.launch();
      const fullConverged = await rig.converge(env.number('CONVERGE_MS', 60_000));
      await sleep(3000);
      const whileFull = await storeFigures(rig);
      for (const name of readdirSync(full)) if (name.startsWith('filler-')) rmSync(join(full, name));
      await sleep(5000);
      const afterFreed = await storeFigures(rig);
      const fullAlive = rig.daemon().running();

      if (!mount('-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', readOnly) || !mount('-o', 'remount,ro', readOnly)) return { skipped: 'cannot mount a read-only tmpfs' };
      mounted.push(readOnly);
      await stopProcess(rig.daemon());
      await rig.startDaemon([], readOnly);
      await rig.launch();
      const roConverged = await rig.converge(env.number('CONVERGE_MS', 60_000));
      await sleep(3000);
      const whileReadOnly = await storeFigures(rig);
      return {
        full: { converged_s: fullConverged ?? null, ...whileFull, store_written_after_space_freed: afterFreed.store_writes_ok > whileFull.store_writes_ok, peak_rss_mib: rig.peakRss() },
        read_only: { converged_s: roConverged ?? null, ...whileReadOnly },
        goals: {
          enricher_stayed_up: fullAlive && rig.daemon().running(),
          published_state_converged: fullConverged !== undefined && roConverged !== undefined,
          failed_writes_counted: whileFull.store_writes_failed > 0 && whileReadOnly.store_writes_failed > 0,
        },
      };
    } finally {
      // The daemon goes first (it writes the store a last time), then the mounts, then the rest.
      await stopProcess(rig.daemon()).catch(() => undefined);
      unmount();
      removeCleanUp();
      await rig.stop();
    }
  },
};
