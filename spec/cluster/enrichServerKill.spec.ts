import { Subject } from 'rxjs';
import { IncusStreamItem } from '../../lib/incus/api';
import { defaultEnricherSettings } from '../../lib/enricher/config/config';
import { EnrichDaemon, startEnrichDaemon } from '../../bin/enrich/daemon';
import { NatsClusterProcess, startNatsCluster } from '../../streams/natsClusterProcess';
import { FakeIncus } from '../helpers/FakeIncus';
import { waitFor } from '../helpers/waitFor';
import { NatsRecorder, lineSink, metricValue } from '../bin/enrich/daemonRig';

// The enricher in-process (the Incus server faked, as in spec/bin/enrich/daemon.spec.ts) publishing
// through a three-server cluster it is given every server of; consumers on every server. The server
// its connection is on is killed (SIGKILL) while instances change: it moves to another server, its
// hold covers only the gap, and the consumers on the other servers see every instance's latest event.

jest.setTimeout(120_000);

/** The server whose client list shows a connection called `name` (from its /connz). */
async function serverOf(cluster: NatsClusterProcess, name: string): Promise<number> {
  for (const [index, server] of cluster.servers.entries()) {
    if (!server.running()) continue;
    const connz = (await (await fetch(`http://127.0.0.1:${server.monitorPort}/connz`)).json()) as { connections?: { name?: string }[] };
    if (connz.connections?.some((c) => c.name === name)) return index;
  }
  return -1;
}

describe('the enricher through a cluster that loses its server', () => {
  let cluster: NatsClusterProcess | undefined;
  const recorders: NatsRecorder[] = [];
  let daemon: EnrichDaemon | undefined;
  afterEach(async () => {
    await daemon?.stop();
    await Promise.all(recorders.splice(0).map((r) => r.stop()));
    await cluster?.stop();
  });

  it('moves to another server; consumers on the others converge on every instance’s latest event; nothing dropped', async () => {
    cluster = await startNatsCluster();
    for (const server of cluster.servers) recorders.push(await NatsRecorder.start(server.url));
    const fake = new FakeIncus();
    fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
    fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
    const events = new Subject<IncusStreamItem>();
    const settings = defaultEnricherSettings({
      storeFile: undefined,
      http: { host: '127.0.0.1', port: 0 },
      readDelay: 0,
      sweepInterval: 3_600_000,
      outputs: { stdout: true, nats: { servers: cluster.urls, subjectPrefix: 'incus.events', name: 'spec-enricher', maxHeld: 100 } },
    });
    const stdout = lineSink();
    daemon = await startEnrichDaemon(settings, { reader: fake.asPromiseReader(), events$: events, stdout: stdout.stream });
    events.next({ kind: 'connected' });
    await waitFor(() => daemon!.ready(), 'ready');
    let on = -1;
    await waitFor(async () => (on = await serverOf(cluster!, 'spec-enricher')) >= 0, 'the enricher on a server');

    await cluster.servers[on].kill();
    // Core NATS is at most once: what is written to the dead server's socket before the client has
    // seen it close is gone, so the changes come once the client has noticed (held meanwhile).
    const moved = async (): Promise<boolean> => {
      const now = await serverOf(cluster!, 'spec-enricher');
      return now >= 0 && now !== on;
    };
    await waitFor(async () => daemon!.status().nats !== 'connected' || (await moved()), 'the enricher to notice');
    for (const name of ['c2', 'c3', 'c4']) {
      fake.createInstance('default', name, { network: 'br0' }).start('default', name, `10.0.0.${name.slice(1)}`);
      events.next(fake.event('instance-started', 'default', name));
    }
    fake.stop('default', 'c1');
    events.next(fake.event('instance-stopped', 'default', 'c1'));
    await waitFor(() => daemon!.status().held === 0 && daemon!.status().nats === 'connected', 'the enricher to publish again', 30_000);
    expect(await serverOf(cluster, 'spec-enricher')).not.toBe(on);

    const latest = { c1: 'instance-stopped', c2: 'instance-started', c3: 'instance-started', c4: 'instance-started' };
    for (const [index, recorder] of recorders.entries()) {
      if (index === on) continue;
      await waitFor(
        () =>
          Object.entries(latest).every(
            ([name, action]) => recorder.messages.filter((m) => m.payload.name === name).at(-1)?.payload.action === action,
          ),
        `the consumer on server ${index + 1} to see every instance's latest event`,
        30_000,
      );
    }
    expect(await metricValue(daemon.registry, 'enricher_published_total', { output: 'nats', result: 'dropped' })).toBe(0);
  });
});
