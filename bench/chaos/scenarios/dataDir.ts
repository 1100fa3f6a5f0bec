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
  return {
    store_writes_ok: await rig.metric('enricher_store_writes_total', { result: 'ok' }),
    store_writes_failed: await rig.metric('enricher_store_writes_total', { result: 'failed' }),
    store_stale: await rig.metric('enricher_store_stale'),
  };
}

/** Seconds until a cold store write lands after `okBefore` writes had, or `undefined` past `limitMs`. */
async function secondsToWrite(rig: EnrichRig, okBefore: number, limitMs: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if ((await rig.metric('enricher_store_writes_total', { result: 'ok' })) > okBefore) return (Date.now() - started) / 1000;
    await sleep(250);
  }
  return undefined;
}

/**
 * `rxfleet enrich` whose data directory is a full filesystem (a 64 KiB tmpfs filled up), then one
 * that is read-only (remounted ro), while instances change. Goals: the enricher stays up and
 * publishes, its state converges to LXD's, and once space is freed the failed write is retried
 * and lands (within the retries' longest wait, 60 s) without any instance changing. Reported
 * beside them: store writes ok and failed, staleness, how long the write took to land. Needs root
 * (mount).
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
      // The retries have backed off to at most 60 s apart by now: one lands within that.
      const writtenAfterS = await secondsToWrite(rig, whileFull.store_writes_ok, 65_000);
      const afterFreed = await storeFigures(rig);
      const fullAlive = rig.daemon().running();

      if (!mount('-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', readOnly) || !mount('-o', 'remount,ro', readOnly))
        return { skipped: 'cannot mount a read-only tmpfs' };
      mounted.push(readOnly);
      await stopProcess(rig.daemon());
      await rig.startDaemon([], readOnly);
      await rig.launch();
      const roConverged = await rig.converge(env.number('CONVERGE_MS', 60_000));
      await sleep(3000);
      const whileReadOnly = await storeFigures(rig);
      return {
        full: {
          converged_s: fullConverged ?? null,
          ...whileFull,
          store_written_s_after_space_freed: writtenAfterS ?? null,
          stale_after_freed: afterFreed.store_stale,
          peak_rss_mib: rig.peakRss(),
        },
        read_only: { converged_s: roConverged ?? null, ...whileReadOnly },
        goals: {
          enricher_stayed_up: fullAlive && rig.daemon().running(),
          published_state_converged: fullConverged !== undefined && roConverged !== undefined,
          failed_writes_counted: whileFull.store_writes_failed > 0 && whileReadOnly.store_writes_failed > 0,
          store_written_after_space_freed: writtenAfterS !== undefined && afterFreed.store_stale === 0,
          stale_shown: whileFull.store_stale === 1 && whileReadOnly.store_stale === 1,
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
