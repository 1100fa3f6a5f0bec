import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NEVER, Subject, concatWith, of } from 'rxjs';
import { jetstreamManager } from '@nats-io/jetstream';
import { IncusStreamItem } from '../../../lib/incus/api';
import { FakeIncus } from '../../helpers/FakeIncus';
import { EnricherSettings, defaultEnricherSettings } from '../../../lib/enricher/config/config';
import { EnrichDaemon, EnrichDaemonError, startEnrichDaemon } from '../../../bin/enrich/daemon';
import { COLD_STORE_FILE } from '../../../lib/enricher/coldStore/coldStore';
import { subjectFor } from '../../../lib/enricher/output/subject';
import { EventPayload } from '../../../lib/enricher/output/payload';
import { openNatsConnection } from '../../../streams/natsConnection';
import { freePort, startNatsServer } from '../../../streams/natsServerProcess';
import { useNatsServer } from '../../helpers/nats';
import { capturingLogger } from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';
import { NatsRecorder, httpGet, lineSink, metricValue, payloadProblems } from './daemonRig';

// The daemon in-process over a real nats-server and a real HTTP endpoint, with the Incus server
// faked (in real time): outputs, readiness, a broker outage, the hold, and the graceful stop. The
// same daemon against a real LXD daemon is daemon.lxd.spec.ts.

function daemonSettings(nats: { url: string; maxHeld?: number } | undefined, overrides: Partial<EnricherSettings> = {}): EnricherSettings {
  return defaultEnricherSettings({
    storeFile: undefined,
    http: { host: '127.0.0.1', port: 0 },
    readDelay: 0,
    sweepInterval: 3_600_000,
    outputs: {
      stdout: true,
      ...(nats !== undefined
        ? { nats: { servers: [nats.url], subjectPrefix: 'incus.events', name: 'spec', maxHeld: nats.maxHeld ?? 100 } }
        : {}),
    },
    ...overrides,
  });
}

function world(): FakeIncus {
  const fake = new FakeIncus();
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  return fake;
}

const lineOf = (text: string): EventPayload => JSON.parse(text) as EventPayload;
const about = (action: string, name: string) => (p: EventPayload) => p.action === action && p.name === name;

describe('rxfleet enrich in-process (fake Incus, real NATS)', () => {
  const server = useNatsServer({ jetstream: false });
  const running: EnrichDaemon[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const daemon of running.splice(0)) await daemon.stop();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const start = async (
    settings: EnricherSettings,
    fake: FakeIncus,
    events: Subject<IncusStreamItem>,
    stdout = lineSink(),
  ): Promise<EnrichDaemon> => {
    const daemon = await startEnrichDaemon(settings, { reader: fake.asPromiseReader(), events$: events, stdout: stdout.stream });
    running.push(daemon);
    return daemon;
  };

  it('publishes every event on its subject as the JSON of its stdout line, valid against the payload schema; /ready goes 503 -> 200', async () => {
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const recorder = await NatsRecorder.start(server().url);
    const stdout = lineSink();
    const daemon = await start(daemonSettings({ url: server().url }), fake, events, stdout);
    try {
      expect((await httpGet(daemon.port as number, '/ready')).status).toBe(503);
      events.next({ kind: 'connected' });
      const round = await recorder.next(about('instance-updated', 'c1'), 'the first round announcing c1');
      expect(round.payload.origin).toBe('round');
      await waitFor(async () => (await httpGet(daemon.port as number, '/ready')).status === 200, '/ready 200');

      fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
      events.next(fake.event('instance-started', 'default', 'c2'));
      const started = await recorder.next(about('instance-started', 'c2'), 'instance-started c2');
      expect(started.subject).toBe('incus.events.default.instance.instance-started.c2');
      expect(started.payload.instance?.interfaces.map((i) => [i.network, i.ipv4])).toEqual([['br0', ['10.0.0.6']]]);

      await waitFor(() => stdout.lines.length === recorder.messages.length, 'stdout and NATS to carry the same events');
      expect(stdout.lines).toEqual(recorder.messages.map((m) => m.text));
      for (const message of recorder.messages) {
        expect(payloadProblems(message.payload)).toEqual([]);
        expect(message.subject).toBe(subjectFor('incus.events', message.payload));
      }
      expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'nats', result: 'sent' })).toBe(
        recorder.messages.length,
      );
      expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'stdout', result: 'sent' })).toBe(
        stdout.lines.length,
      );
      // By action and status, for dashboards: the events above, each counted once.
      const startedCount = recorder.messages.filter((m) => m.payload.action === 'instance-started').length;
      expect(
        await metricValue(daemon.registry, 'enricher_events_published_total', {
          kind: 'instance',
          action: 'instance-started',
          status: 'ok',
        }),
      ).toBe(startedCount);
      expect(
        await metricValue(daemon.registry, 'enricher_events_published_total', {
          kind: 'instance',
          action: 'instance-updated',
          status: 'ok',
        }),
      ).toBe(recorder.messages.filter((m) => m.payload.action === 'instance-updated').length);
    } finally {
      await recorder.stop();
    }
  });

  it("serves /health with the status, and /metrics with the enricher's and its own series on one registry, which promtool accepts", async () => {
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const daemon = await start(daemonSettings({ url: server().url }), fake, events);
    events.next({ kind: 'connected' });
    await waitFor(() => daemon.ready(), 'ready');
    const health = await httpGet(daemon.port as number, '/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({
      status: 'ok',
      connected: true,
      warm: true,
      ready: true,
      instances: 1,
      nats: 'connected',
      held: 0,
      stopping: false,
      incus: 'injected',
      coldStore: 'off',
    });
    const metrics = await httpGet(daemon.port as number, '/metrics');
    for (const series of [
      'enricher_instances 1',
      'enricher_connected 1',
      'enricher_nats_connected 1',
      'enricher_nats_held 0',
      'enricher_published_total{output="stdout",result="failed"} 0',
      'enricher_sweeps_total{result="success"} 1',
    ]) {
      expect(metrics.body).toContain(series);
    }
    const check = spawnSync('promtool', ['check', 'metrics'], { input: metrics.body, encoding: 'utf8' });
    expect(check.stderr).not.toMatch(/error/i);
  });

  it('keeps enriching while NATS is down, holds what it could not publish, and sends it in order when NATS is back', async () => {
    const own = await startNatsServer({ jetstream: true });
    const admin = await openNatsConnection({ servers: [own.url] });
    try {
      const jsm = await jetstreamManager(admin.nc);
      await jsm.streams.add({ name: 'EVENTS', subjects: ['incus.events.>'] });
      const fake = world();
      const events = new Subject<IncusStreamItem>();
      const stdout = lineSink();
      const daemon = await start(daemonSettings({ url: own.url }), fake, events, stdout);
      events.next({ kind: 'connected' });
      await waitFor(() => daemon.ready(), 'ready');

      await own.kill();
      await waitFor(() => daemon.status().nats === 'disconnected', 'the daemon to notice NATS is gone');
      expect((await httpGet(daemon.port as number, '/ready')).status).toBe(503);
      for (const name of ['c2', 'c3', 'c4']) {
        fake.createInstance('default', name, { network: 'br0' }).start('default', name, `10.0.0.${name.slice(1)}`);
        events.next(fake.event('instance-started', 'default', name));
      }
      // The pipeline did not wait for NATS: the events are out on stdout, and held for NATS.
      await waitFor(() => stdout.lines.filter((l) => lineOf(l).action === 'instance-started').length === 3, 'the three starts on stdout');
      expect(daemon.status().held).toBe(3);
      expect(await metricValue(daemon.registry, 'enricher_nats_held')).toBe(3);

      await own.restart();
      await waitFor(() => daemon.status().held === 0 && daemon.status().nats === 'connected', 'the held events to be sent', 30_000);
      const stored: EventPayload[] = [];
      // The spec's own connection reconnects too; a request while it does times out, and is asked again.
      const storedCount = (): Promise<number> =>
        jsm.streams.info('EVENTS').then(
          (info) => info.state.messages,
          () => -1,
        );
      await waitFor(async () => (await storedCount()) === stdout.lines.length, 'the stream to hold every event', 30_000);
      for (let seq = 1; seq <= stdout.lines.length; seq++)
        stored.push(((await jsm.streams.getMessage('EVENTS', { seq })) as { json<T>(): T }).json<EventPayload>());
      expect(stored.map((p) => `${p.action} ${p.name}`)).toEqual(stdout.lines.map((l) => `${lineOf(l).action} ${lineOf(l).name}`));
      expect(stored.slice(-3).map((p) => p.name)).toEqual(['c2', 'c3', 'c4']);
      expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'nats', result: 'dropped' })).toBe(0);
    } finally {
      await admin.drain();
      await own.stop();
    }
  });

  it("holds at most max_held events for an unreachable NATS and past them each object's last word; stopping never waits for NATS and counts what it drops", async () => {
    const port = await freePort(); // nobody there, ever
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const stdout = lineSink();
    const daemon = await start(daemonSettings({ url: `nats://127.0.0.1:${port}`, maxHeld: 1 }), fake, events, stdout);
    events.next({ kind: 'connected' });
    await waitFor(() => stdout.lines.length === 1, 'the round event on stdout');
    for (const name of ['c2', 'c3']) {
      fake.createInstance('default', name, { network: 'br0' }).start('default', name, `10.0.0.${name.slice(1)}`);
      events.next(fake.event('instance-started', 'default', name));
    }
    await waitFor(() => stdout.lines.length === 3, 'three events on stdout');
    // One held, and the two pushed out of the hold kept as their objects' last words: three objects, nothing superseded.
    expect(daemon.status()).toMatchObject({ nats: 'connecting', held: 3, ready: false });
    expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'nats', result: 'dropped' })).toBe(0);
    await daemon.stop();
    expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'nats', result: 'dropped' })).toBe(3);
    expect(await daemon.stopped).toEqual({ abandoned: 0 });
  });

  it('on stop hands on an event whose read has not landed, writes the cold store 0600, and the next start is warm from it (E1)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-'));
    dirs.push(dir);
    const fake = world();
    fake.latency = (call) => (call.name === 'slow' ? 600_000 : 0);
    const events = new Subject<IncusStreamItem>();
    const stdout = lineSink();
    const settings = daemonSettings(undefined, { storeFile: join(dir, 'data', COLD_STORE_FILE) });
    const daemon = await start(settings, fake, events, stdout);
    events.next({ kind: 'connected' });
    await waitFor(() => daemon.ready(), 'ready');
    fake.createInstance('default', 'slow', { network: 'br0' }).start('default', 'slow', '10.0.0.9');
    events.next(fake.event('instance-started', 'default', 'slow'));
    await waitFor(() => daemon.status().line === 1, 'the start to wait for its read');
    await daemon.stop();
    const last = lineOf(stdout.lines[stdout.lines.length - 1]);
    // As it arrived: its project's labels (attached on arrival), no instance (its read never landed).
    expect(last).toMatchObject({ action: 'instance-started', name: 'slow', status: 'ok', enriched: ['project'] });
    expect(last.instance).toBeUndefined();
    expect(statSync(join(dir, 'data', COLD_STORE_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'data')).mode & 0o777).toBe(0o700);

    const again = await start(settings, world(), new Subject<IncusStreamItem>());
    expect(again.status()).toMatchObject({ warm: true, connected: false, ready: false, instances: 1 });
  });

  it('stays ready while the cold store cannot be written, says it is stale, and writes it once the directory is back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-'));
    dirs.push(dir);
    const dataDir = join(dir, 'data');
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const daemon = await start(daemonSettings(undefined, { storeFile: join(dataDir, COLD_STORE_FILE), storeInterval: 100 }), fake, events);
    events.next({ kind: 'connected' });
    await waitFor(() => daemon.ready(), 'ready');
    // The directory becomes a regular file (a write fails even for root), and an instance changes.
    rmSync(dataDir, { recursive: true });
    writeFileSync(dataDir, 'not a directory');
    fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
    events.next(fake.event('instance-started', 'default', 'c2'));
    await waitFor(() => daemon.status().coldStore === 'stale', 'a failed cold store write');
    const ready = await httpGet(daemon.port as number, '/ready');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({ ready: true, coldStore: 'stale' });
    expect(await metricValue(daemon.registry, 'enricher_store_stale')).toBe(1);
    expect(await metricValue(daemon.registry, 'enricher_store_writes_total', { result: 'failed' })).toBeGreaterThanOrEqual(1);

    rmSync(dataDir);
    mkdirSync(dataDir, { mode: 0o700 });
    await waitFor(() => daemon.status().coldStore === 'ok', 'a retried cold store write to land');
    expect(await metricValue(daemon.registry, 'enricher_store_stale')).toBe(0);
    const storedNames = (): string[] =>
      Object.keys(
        (
          JSON.parse(readFileSync(join(dataDir, COLD_STORE_FILE), 'utf8')) as {
            projects: { default: { instances: Record<string, unknown> } };
          }
        ).projects.default.instances,
      ).sort();
    await waitFor(() => storedNames().length === 2, 'the store to hold c2');
    expect(storedNames()).toEqual(['c1', 'c2']);
  });

  it('stops by itself, saying so, when the event stream ends', async () => {
    const events = new Subject<IncusStreamItem>();
    const daemon = await start(daemonSettings(undefined), world(), events);
    events.complete();
    expect(await daemon.stopped).toEqual({ abandoned: 0, failed: 'the Incus event stream ended' });
  });

  it('stops, saying why, when a stage of its pipeline throws (a bug): stopped says failed, and what went out before it stays out', async () => {
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const stdout = lineSink();
    const { logger, messages } = capturingLogger();
    const daemon = await startEnrichDaemon(daemonSettings(undefined), {
      reader: fake.asPromiseReader(),
      events$: events,
      stdout: stdout.stream,
      logger,
    });
    running.push(daemon);
    events.next({ kind: 'connected' });
    await waitFor(() => stdout.lines.some((line) => about('instance-updated', 'c1')(lineOf(line))), 'the first round announcing c1');
    // An item the decode stage cannot even look at: reading it throws, as a bug there would.
    events.next({
      kind: 'event',
      get event(): never {
        throw new Error('a bug in a stage');
      },
    } as unknown as IncusStreamItem);
    expect((await daemon.stopped).failed).toBe('the enricher pipeline failed: a bug in a stage');
    expect(messages()).toContain('the enricher pipeline failed (a bug): stopping');
    expect(stdout.lines.some((line) => about('instance-updated', 'c1')(lineOf(line)))).toBe(true);
  });

  it('refuses to start without an output', async () => {
    await expect(
      startEnrichDaemon(daemonSettings(undefined, { outputs: { stdout: false } }), { reader: world(), events$: new Subject() }),
    ).rejects.toThrow(EnrichDaemonError);
  });

  it('hands every payload to a consumer in the same process, in order and as stdout carries it; with one, no other output is needed', async () => {
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const stdout = lineSink();
    const handed: EventPayload[] = [];
    const withStdout = await startEnrichDaemon(daemonSettings(undefined), {
      reader: fake.asPromiseReader(),
      events$: events,
      stdout: stdout.stream,
      consumer: (p) => handed.push(p),
    });
    running.push(withStdout);
    events.next({ kind: 'connected' });
    fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
    events.next(fake.event('instance-started', 'default', 'c2'));
    await waitFor(() => handed.some(about('instance-started', 'c2')), 'instance-started c2 handed over');
    await waitFor(() => stdout.lines.length === handed.length, 'stdout to carry the same events');
    expect(stdout.lines.map(lineOf)).toEqual(handed);

    const alone: EventPayload[] = [];
    const bare = await startEnrichDaemon(daemonSettings(undefined, { outputs: { stdout: false } }), {
      reader: world().asPromiseReader(),
      events$: of<IncusStreamItem>({ kind: 'connected' }).pipe(concatWith(NEVER)),
      consumer: (p) => alone.push(p),
    });
    running.push(bare);
    await waitFor(() => alone.some(about('instance-updated', 'c1')), 'the first round handed over without any other output');
  });
});
