import { Subject } from 'rxjs';
import { IncusStreamItem } from '../../lib/incus/api';
import { defaultEnricherSettings, parseEnricherConfig } from '../../lib/enricher/config/config';
import { EnrichDaemon, startEnrichDaemon } from '../../bin/enrich/daemon';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { NatsClusterProcess, startNatsCluster } from '../../streams/natsClusterProcess';
import { FakeIncus } from '../helpers/FakeIncus';
import { CountingConsumer, bucketInstances, differences, fakeView } from '../helpers/durableEvents';
import { waitFor } from '../helpers/waitFor';
import { metricValue } from '../bin/enrich/daemonRig';

// The enricher's JetStream output and state bucket on a three-server cluster, the stream and the
// bucket replicated on all three, the enricher given every server (the Incus server faked, as in
// enrichServerKill.spec.ts): the server leading the stream is SIGKILLed while instances change. A
// consumer on another server counts every event by its instance's sequence: no gap, nothing twice
// (the duplicate window holds across the stream's leader change: the new leader has the ids with
// the messages), and the bucket ends as the fleet is.

jest.setTimeout(180_000);

const INSTANCES = 12;

describe('durable enriched events on a cluster that loses the stream leader', () => {
  let cluster: NatsClusterProcess | undefined;
  let daemon: EnrichDaemon | undefined;
  let consumerConnection: FleetConnection | undefined;
  let consumer: CountingConsumer | undefined;
  afterEach(async () => {
    consumer?.stop();
    await daemon?.stop();
    await consumerConnection?.drain();
    await cluster?.stop();
  });

  it('publishes through the leader change: every sequence once, the bucket as the fleet is', async () => {
    cluster = await startNatsCluster();
    const fake = new FakeIncus();
    fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
    for (let i = 0; i < INSTANCES; i++)
      fake.createInstance('default', `c${i}`, { network: 'br0' }).start('default', `c${i}`, `10.0.0.${i + 10}`);
    const { settings: parsed } = parseEnricherConfig({
      outputs: {
        jetstream: { url: cluster.urls.join(','), create: true, replicas: 3, ack_timeout: '2s' },
        state: { create: true, replicas: 3 },
      },
    });
    const events = new Subject<IncusStreamItem>();
    daemon = await startEnrichDaemon(
      defaultEnricherSettings({ storeFile: undefined, http: undefined, readDelay: 0, sweepInterval: 3_600_000, outputs: parsed.outputs }),
      { reader: fake.asPromiseReader(), events$: events },
    );
    await waitFor(() => daemon!.status().role === 'active', 'the enricher to enrich', 60_000);
    events.next({ kind: 'connected' });
    await waitFor(() => daemon!.ready(), 'ready', 60_000);

    const leader = cluster.server((await cluster.streamLeader('INCUS_EVENTS', '$G'))!);
    expect((await cluster.streamLeader('KV_INCUS_STATE', '$G')) !== undefined).toBe(true);
    const elsewhere = cluster.servers.find((s) => s !== leader)!;
    consumerConnection = await openNatsConnection({ servers: [elsewhere.url], name: 'spec-consumer', reconnectWaitMs: 50 });
    consumer = new CountingConsumer(consumerConnection.nc);
    consumer.start();

    // Changes go on while the leader dies: a configuration change, or a stop or start, every 20 ms.
    let n = 0;
    let changing = true;
    const changes = (async () => {
      while (changing) {
        const name = `c${n % INSTANCES}`;
        if (n % 5 === 0) {
          const { instances } = fake.world();
          if (instances.some((i) => i.name === name)) fake.stop('default', name);
          events.next(fake.event('instance-stopped', 'default', name));
        } else {
          fake.configure('default', name, { 'user.n': String(n) });
          events.next(fake.event('instance-updated', 'default', name));
        }
        n++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await new Promise((r) => setTimeout(r, 1000));
    await leader.kill();
    await new Promise((r) => setTimeout(r, 3000));
    changing = false;
    await changes;

    await waitFor(() => daemon!.status().line === 0 && daemon!.status().jetstreamHeld === 0, 'every event acknowledged', 60_000);
    const truth = fakeView(fake);
    await waitFor(
      // A read that fails while the cluster elects leaders is not an answer yet.
      async () => differences(truth, await bucketInstances(consumerConnection!.nc).catch(() => new Map())).length === 0,
      'the bucket to hold the fleet as it is',
      60_000,
    );
    await waitFor(() => consumer!.caughtUp(), 'the consumer to catch up', 60_000);
    // The leader's death caught publishes in flight: they went again (and the new leader kept each once).
    let retried = 0;
    for (const reason of ['timeout', 'error', 'disconnected', 'not_stored'])
      retried += await metricValue(daemon.registry, 'enricher_jetstream_retries_total', { reason });
    expect(retried).toBeGreaterThan(0);
    const report = await consumer.report();
    expect(report.events).toBeGreaterThan(INSTANCES);
    expect({ gaps: report.gaps, duplicates: report.duplicates }).toEqual({ gaps: [], duplicates: [] });
  });
});
