import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { IncusStreamItem } from '../../../lib/incus/api';
import { COLD_STORE_FILE, OpenColdStore } from '../../../lib/enricher/coldStore/coldStore';
import { Enricher, createEnricher } from '../../../lib/enricher/pipeline/createEnricher';
import { fileColdStore } from '../../../streams/coldStoreFile';
import { FakeIncus } from '../../helpers/FakeIncus';
import { memoryColdStore } from '../../helpers/memoryColdStore';
import { metric, newTs, settings, smallWorld } from './harness';

const connected: IncusStreamItem = { kind: 'connected' };

interface Line {
  msg: string;
  level: number;
  failures?: number;
  retryInMs?: number;
  err?: { message: string };
}

function capture(): { logger: pino.Logger; lines: () => Line[] } {
  const chunks: string[] = [];
  const stream = new Writable({ write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()) });
  return {
    logger: pino({ level: 'debug' }, stream),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Line),
  };
}

function fleet(ts: TestScheduler): FakeIncus {
  const fake = smallWorld(ts);
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
  return fake;
}

/**
 * An enricher over a small fleet on a TestScheduler driven step by step (not `run()`), so a spec
 * can await between steps: real file I/O, the metrics. The stream connects at 0; the first round
 * is done within milliseconds; the first store tick is at 5 s (`store_interval`).
 */
function rig(store: OpenColdStore): {
  ts: TestScheduler;
  enricher: Enricher;
  registry: Registry;
  lines: () => Line[];
  stepTo: (frame: number) => void;
} {
  const ts = newTs();
  const { logger, lines } = capture();
  const registry = new Registry();
  const events = new Subject<IncusStreamItem>();
  const enricher = createEnricher({ events$: events, reader: fleet(ts), config: settings(), registry, scheduler: ts, logger, store });
  enricher.events$.subscribe();
  events.next(connected);
  const stepTo = (frame: number): void => {
    ts.maxFrames = frame;
    ts.flush();
  };
  return { ts, enricher, registry, lines, stepTo };
}

const failedLines = (lines: Line[]): Line[] => lines.filter((l) => l.msg.startsWith('writing the cold store failed'));

describe('the cold store after a failed write', () => {
  it('stays dirty and is written again 1 s, 2 s, 4 s later until a write lands; stale meanwhile, fresh after', async () => {
    const store = memoryColdStore();
    store.failNext = 3;
    const attempts: number[] = [];
    const save = store.save.bind(store);
    const r = rig(store.open);
    store.save = (document) => {
      attempts.push(r.ts.now());
      return save(document);
    };
    const stale = (): Promise<number> => metric(r.registry, 'enricher_store_stale');

    r.stepTo(4999);
    expect(attempts).toEqual([]);
    expect(r.enricher.status().coldStore).toBe('ok');

    r.stepTo(5000);
    expect(attempts).toEqual([5000]);
    expect(r.enricher.status().coldStore).toBe('stale');
    expect(await stale()).toBe(1);
    expect(await metric(r.registry, 'enricher_store_writes_total', { result: 'failed' })).toBe(1);

    r.stepTo(11_999);
    expect(attempts).toEqual([5000, 6000, 8000]);
    expect(r.enricher.status().coldStore).toBe('stale');
    expect(store.saved).toHaveLength(0);

    r.stepTo(12_000);
    expect(attempts).toEqual([5000, 6000, 8000, 12_000]);
    expect(store.saved).toHaveLength(1);
    expect(Object.keys(store.saved[0].projects.default.instances ?? {})).toEqual(['c1', 'c2']);
    expect(r.enricher.status().coldStore).toBe('ok');
    expect(await stale()).toBe(0);
    expect(await metric(r.registry, 'enricher_store_last_success_timestamp_seconds')).toBe(12);
    expect(await metric(r.registry, 'enricher_store_writes_total', { result: 'failed' })).toBe(3);
    expect(await metric(r.registry, 'enricher_store_writes_total', { result: 'ok' })).toBe(1);

    // Back on the ticks: nothing changed, nothing written.
    r.stepTo(60_000);
    expect(attempts).toHaveLength(4);
    // One error line per failure, saying when the next try is; one line when a write lands again.
    expect(failedLines(r.lines()).map((l) => [l.level, l.failures, l.retryInMs, l.err?.message])).toEqual([
      [50, 1, 1000, 'ENOSPC: no space left on device, write'],
      [50, 2, 2000, 'ENOSPC: no space left on device, write'],
      [50, 3, 4000, 'ENOSPC: no space left on device, write'],
    ]);
    expect(
      r
        .lines()
        .filter((l) => l.msg === 'cold store written again after failed writes')
        .map((l) => l.failures),
    ).toEqual([3]);
    r.enricher.drain();
    r.stepTo(60_000);
    await r.enricher.stopped;
    expect(attempts).toHaveLength(4);
  });

  it('backs off to one try a minute on a disk that stays full: one error line per try', async () => {
    const store = memoryColdStore();
    store.failNext = Number.POSITIVE_INFINITY;
    const attempts: number[] = [];
    const save = store.save.bind(store);
    const r = rig(store.open);
    store.save = (document) => {
      attempts.push(r.ts.now());
      return save(document);
    };
    r.stepTo(10 * 60_000);
    const gaps = attempts.slice(1).map((at, i) => at - attempts[i]);
    expect(gaps.slice(0, 9)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
    expect(new Set(gaps.slice(6))).toEqual(new Set([60_000]));
    expect(failedLines(r.lines())).toHaveLength(attempts.length);
    expect(await metric(r.registry, 'enricher_store_writes_total', { result: 'failed' })).toBe(attempts.length);
    expect(await metric(r.registry, 'enricher_store_stale')).toBe(1);
    expect(await metric(r.registry, 'enricher_store_last_success_timestamp_seconds')).toBe(0);
    r.enricher.drain();
    r.stepTo(10 * 60_000);
    await r.enricher.stopped;
  });

  it('is written on the way out even though the last write failed and the model has not changed since', async () => {
    const store = memoryColdStore();
    store.failNext = 1;
    const attempts: number[] = [];
    const save = store.save.bind(store);
    const r = rig(store.open);
    store.save = (document) => {
      attempts.push(r.ts.now());
      return save(document);
    };
    r.stepTo(5000);
    expect(attempts).toEqual([5000]);
    expect(r.enricher.status().coldStore).toBe('stale');
    r.enricher.drain();
    await r.enricher.stopped;
    expect(attempts).toEqual([5000, 5000]);
    expect(Object.keys(store.saved[0]?.projects.default.instances ?? {})).toEqual(['c1', 'c2']);
    // The retry that was due at 6 s was cancelled by the stop.
    r.stepTo(120_000);
    expect(attempts).toHaveLength(2);
  });

  it('says so when the write on the way out fails too, and still stops', async () => {
    const store = memoryColdStore();
    store.failNext = 2;
    const r = rig(store.open);
    r.stepTo(5000);
    r.enricher.drain();
    await r.enricher.stopped;
    expect(store.attempts).toBe(2);
    expect(failedLines(r.lines()).map((l) => l.msg)).toEqual([
      'writing the cold store failed: it is stale until a retry lands',
      'writing the cold store failed on the way out: the next start reads the last one written',
    ]);
    expect(await metric(r.registry, 'enricher_store_stale')).toBe(1);
  });

  describe('on the real file (streams/coldStoreFile.ts)', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'rxfleet-store-retry-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('a data directory that cannot hold the file (a regular file in its place, which fails even for root) is retried, and the retry lands once it is a directory', async () => {
      const dataDir = join(dir, 'data');
      writeFileSync(dataDir, 'not a directory');
      const storeFile = join(dataDir, COLD_STORE_FILE);
      const outcomes: Array<{ ok: boolean; code: string | undefined }> = [];
      let reported: () => void = () => undefined;
      const nextOutcome = (): Promise<void> => new Promise((resolve) => (reported = resolve));
      const r = rig((hooks) =>
        fileColdStore(storeFile, {
          logger: hooks.logger,
          onWrite: (ok, error) => {
            hooks.onWrite(ok, error);
            outcomes.push({ ok, code: (error as NodeJS.ErrnoException | undefined)?.code });
            reported();
          },
        }),
      );

      let outcome = nextOutcome();
      r.stepTo(5000);
      await outcome;
      expect(outcomes).toEqual([{ ok: false, code: 'ENOTDIR' }]);
      expect(r.enricher.status().coldStore).toBe('stale');
      expect(failedLines(r.lines())).toHaveLength(1);

      // The operator frees the way: the retry at 6 s writes without anything changing in the fleet.
      rmSync(dataDir);
      mkdirSync(dataDir, { mode: 0o700 });
      outcome = nextOutcome();
      r.stepTo(6000);
      await outcome;
      expect(outcomes).toEqual([
        { ok: false, code: 'ENOTDIR' },
        { ok: true, code: undefined },
      ]);
      expect(r.enricher.status().coldStore).toBe('ok');
      expect(await metric(r.registry, 'enricher_store_stale')).toBe(0);
      expect(statSync(storeFile).mode & 0o777).toBe(0o600);
      const stored = JSON.parse(readFileSync(storeFile, 'utf8')) as { projects: { default: { instances: Record<string, unknown> } } };
      expect(Object.keys(stored.projects.default.instances)).toEqual(['c1', 'c2']);

      r.enricher.drain();
      await r.enricher.stopped;
      expect(outcomes).toHaveLength(2);
    });
  });
});
