import { spawnSync } from 'node:child_process';
import { Subject } from 'rxjs';
import { jetstreamManager } from '@nats-io/jetstream';
import { IncusStreamItem } from '../../../lib/incus/api';
import { EnricherSettings, defaultEnricherSettings, parseEnricherConfig } from '../../../lib/enricher/config/config';
import { EnrichDaemon, startEnrichDaemon } from '../../../bin/enrich/daemon';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { FakeIncus } from '../../helpers/FakeIncus';
import { bucketInstances, countSequences, differences, fakeView, readStream } from '../../helpers/durableEvents';
import { waitFor } from '../../helpers/waitFor';
import { httpGet, metricValue, payloadProblems } from './daemonRig';

// `rxfleet enrich` with its JetStream output and state bucket, in-process over a real nats-server
// with the Incus server faked: the stream and the bucket checked or created, each event with its
// id and its instance's sequence, a restart that continues every sequence and says only what
// changed, and a standby that takes over. The same on a real LXD and Incus, with processes killed,
// is durable.lxd.spec.ts.

jest.setTimeout(60_000);

function world(): FakeIncus {
  const fake = new FakeIncus();
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
  return fake;
}

describe('rxfleet enrich with a JetStream output and a state bucket', () => {
  let server: NatsServerProcess;
  let admin: FleetConnection;
  const running: EnrichDaemon[] = [];

  beforeEach(async () => {
    server = await startNatsServer({ jetstream: true });
    admin = await openNatsConnection({ servers: [server.url], name: 'spec-admin' });
  });
  afterEach(async () => {
    for (const daemon of running.splice(0)) await daemon.stop();
    await admin.drain();
    await server.stop();
  });

  const settings = (yaml: Record<string, unknown> = {}, overrides: Partial<EnricherSettings> = {}): EnricherSettings => {
    const { settings: parsed } = parseEnricherConfig({
      outputs: {
        jetstream: { url: server.url, create: true, replicas: 1, max_age: '1h', max_bytes: '64MiB', duplicate_window: '1m' },
        state: { create: true },
      },
      ...yaml,
    });
    return defaultEnricherSettings({
      storeFile: undefined,
      http: { host: '127.0.0.1', port: 0 },
      readDelay: 0,
      sweepInterval: 3_600_000,
      outputs: parsed.outputs,
      ...(parsed.standby !== undefined ? { standby: parsed.standby } : {}),
      ...overrides,
    });
  };
  const start = async (s: EnricherSettings, fake: FakeIncus, events: Subject<IncusStreamItem>): Promise<EnrichDaemon> => {
    const daemon = await startEnrichDaemon(s, { reader: fake.asPromiseReader(), events$: events });
    running.push(daemon);
    return daemon;
  };
  /** Starts a daemon and connects its event stream once it enriches. */
  const active = async (s: EnricherSettings, fake: FakeIncus): Promise<{ daemon: EnrichDaemon; events: Subject<IncusStreamItem> }> => {
    const events = new Subject<IncusStreamItem>();
    const daemon = await start(s, fake, events);
    await waitFor(() => daemon.status().role === 'active', 'the daemon to enrich');
    events.next({ kind: 'connected' });
    await waitFor(() => daemon.ready(), 'ready');
    return { daemon, events };
  };
  const settled = async (daemon: EnrichDaemon): Promise<void> =>
    waitFor(() => daemon.status().line === 0 && daemon.status().jetstreamHeld === 0, 'everything acknowledged');

  it('refuses to start without the stream it needs, saying how to make it', async () => {
    const daemon = await start(settings({ outputs: { jetstream: { url: server.url } } }), world(), new Subject());
    const report = await daemon.stopped;
    expect(report.failed).toMatch(
      /no stream INCUS_EVENTS on the server: create one capturing incus\.events\.> .* or set outputs\.jetstream\.create: true/,
    );
    expect(daemon.ready()).toBe(false);
  });

  it('creates the stream and the bucket as configured, publishes each event with its id and its instance’s sequence, and keeps the bucket equal to the fleet', async () => {
    const fake = world();
    const { daemon, events } = await active(settings(), fake);
    const jsm = await jetstreamManager(admin.nc);
    const info = await jsm.streams.info('INCUS_EVENTS');
    expect(info.config).toMatchObject({
      subjects: ['incus.events.>'],
      num_replicas: 1,
      max_age: 3_600_000_000_000,
      max_bytes: 64 * 2 ** 20,
      duplicate_window: 60_000_000_000,
    });
    expect((await jsm.streams.info('KV_INCUS_STATE')).config).toMatchObject({ max_msgs_per_subject: 1, num_replicas: 1 });

    fake.stop('default', 'c1');
    events.next(fake.event('instance-stopped', 'default', 'c1'));
    fake.deleteInstance('default', 'c2');
    events.next(fake.event('instance-deleted', 'default', 'c2'));
    await settled(daemon);
    const records = await readStream(admin.nc);
    expect(records.map((r) => `${r.payload.action} ${r.payload.name}#${r.seq} ${r.id}`)).toEqual([
      'instance-updated c1#1 instance/default/c1/1',
      'instance-updated c2#1 instance/default/c2/1',
      'instance-stopped c1#2 instance/default/c1/2',
      'instance-deleted c2#2 instance/default/c2/2',
    ]);
    for (const r of records) expect(payloadProblems(r.payload)).toEqual([]);
    await waitFor(async () => differences(fakeView(fake), await bucketInstances(admin.nc)).length === 0, 'the bucket to equal the fleet');
    expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'jetstream', result: 'sent' })).toBe(4);
    // The watermark is written as it grows, at most every 100 ms: every event is in the bucket.
    await waitFor(async () => (await metricValue(daemon.registry, 'enricher_state_watermark')) === 4, 'the watermark to cover every event');
    const health = JSON.parse((await httpGet(daemon.port as number, '/health')).body) as Record<string, unknown>;
    expect(health).toMatchObject({ role: 'active', jetstream: 'connected', jetstreamHeld: 0 });
    const metrics = (await httpGet(daemon.port as number, '/metrics')).body;
    for (const name of [
      'enricher_jetstream_ack_seconds',
      'enricher_jetstream_retries_total',
      'enricher_state_writes_total',
      'enricher_active',
    ])
      expect(metrics).toContain(name);
    expect(spawnSync('promtool', ['check', 'metrics'], { input: metrics, encoding: 'utf8' }).stderr).not.toMatch(/error/i);
  });

  it('a restart continues every sequence and says only what changed meanwhile, as a round', async () => {
    const fake = world();
    const first = await active(settings(), fake);
    await settled(first.daemon);
    await first.daemon.stop();
    // While no enricher listens: c1 stops, c2 goes, c3 comes.
    fake.stop('default', 'c1');
    fake.deleteInstance('default', 'c2');
    fake.createInstance('default', 'c3', { network: 'br0' }).start('default', 'c3', '10.0.0.7');
    const second = await active(settings(), fake);
    await waitFor(async () => (await readStream(admin.nc)).length === 5, 'the round to say what changed');
    await settled(second.daemon);
    const records = await readStream(admin.nc);
    expect(
      records
        .slice(2)
        .map((r) => `${r.payload.action} ${r.payload.origin} ${r.payload.name}#${r.seq}`)
        .sort(),
    ).toEqual(['instance-deleted prune c2#2', 'instance-updated round c1#2', 'instance-updated round c3#1']);
    expect(countSequences(records)).toMatchObject({ gaps: [], duplicates: [] });
    await waitFor(async () => differences(fakeView(fake), await bucketInstances(admin.nc)).length === 0, 'the bucket to equal the fleet');
  });

  it('a standby takes over when the active one goes, warm from the bucket; what changed meanwhile comes out as the round', async () => {
    const fake = world();
    const pair = (identity: string): EnricherSettings => settings({ standby: { identity, create: true, ttl: '2s' } });
    const eventsA = new Subject<IncusStreamItem>();
    const eventsB = new Subject<IncusStreamItem>();
    const a = await start(pair('a'), fake, eventsA);
    const b = await start(pair('b'), fake, eventsB);
    await waitFor(() => [a, b].some((d) => d.status().role === 'active'), 'one of the pair to lead', 30_000);
    const [leader, standby, leaderEvents, standbyEvents] =
      a.status().role === 'active' ? [a, b, eventsA, eventsB] : [b, a, eventsB, eventsA];
    expect(standby.status().role).toBe('standby');
    await waitFor(() => standby.ready(), 'the standby to be ready');
    leaderEvents.next({ kind: 'connected' });
    await settled(leader);
    await waitFor(async () => (await bucketInstances(admin.nc)).size === 2, 'the bucket to hold the fleet');
    // The leader goes without a word (its key lives out the TTL); meanwhile c1 stops.
    await leader.stop();
    fake.stop('default', 'c1');
    await waitFor(() => standby.status().role === 'active', 'the standby to take over', 30_000);
    expect(standby.status().warm).toBe(true);
    standbyEvents.next({ kind: 'connected' });
    await waitFor(async () => (await readStream(admin.nc)).length === 3, 'the round to say c1 stopped');
    const records = await readStream(admin.nc);
    expect(records.map((r) => `${r.payload.action} ${r.payload.origin} ${r.payload.name}#${r.seq}`)).toEqual([
      'instance-updated round c1#1',
      'instance-updated round c2#1',
      'instance-updated round c1#2',
    ]);
    expect(records[2].payload.instance?.running).toBe(false);
    expect(await metricValue(standby.registry, 'enricher_takeovers_total')).toBe(1);
    await waitFor(async () => differences(fakeView(fake), await bucketInstances(admin.nc)).length === 0, 'the bucket to equal the fleet');
  });
});
