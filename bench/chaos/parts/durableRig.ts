import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { NatsClusterProcess, startNatsCluster } from '../../../streams/natsClusterProcess';
import { DurableWorld, Enricher } from '../../../spec/helpers/durableWorld';
import { sampleValue } from '../../../spec/helpers/provisioner';
import { TestDaemon, daemonSpecsUnavailable, startTestDaemon } from '../../../spec/helpers/testDaemon';
import { onCleanUp } from './processes';

/**
 * A private LXD daemon with a few instances, a private nats-server (or a three-server cluster, the
 * stream and buckets on all three), `rxfleet enrich` processes publishing to a stream and a state
 * bucket, and a consumer counting every event by its instance's sequence (spec/helpers/
 * durableWorld.ts): what the chaos suite's enricher faults run on.
 */
export interface DurableRig {
  readonly lxd: TestDaemon;
  readonly world: DurableWorld;
  /** The one server, when not a cluster. */
  readonly nats: NatsServerProcess | undefined;
  readonly cluster: NatsClusterProcess | undefined;
  /** Successful rounds an enricher has ended (its /metrics). */
  rounds(enricher: Enricher): Promise<number>;
  /** What the consumer's count found: gaps the stream does not explain, and sequences seen twice. */
  counts(): Promise<{ gaps: number; duplicates: number; events: number; first_gaps: string[] }>;
  stop(): Promise<void>;
}

/** Why the rig's private LXD daemon cannot start here, or `undefined`. */
export const durableUnavailable = (): string | undefined => daemonSpecsUnavailable('lxd');

export async function startDurableRig(instances: number, options: { cluster?: boolean } = {}): Promise<DurableRig> {
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-chaos-durable-'));
  const lxd = await startTestDaemon('lxd');
  const nats = options.cluster === true ? undefined : await startNatsServer({ jetstream: true });
  const cluster = options.cluster === true ? await startNatsCluster() : undefined;
  const urls = nats !== undefined ? [nats.url] : (cluster as NatsClusterProcess).urls;
  const held: { admin?: FleetConnection; world?: DurableWorld } = {};
  const stop = async (): Promise<void> => {
    await held.world?.stop();
    await held.admin?.drain().catch(() => undefined);
    await nats?.stop();
    await cluster?.stop();
    await lxd.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  const removeCleanUp = onCleanUp(stop);
  const admin = await openNatsConnection({ servers: urls, name: 'chaos-admin', reconnectWaitMs: 50 });
  held.admin = admin;
  const active = new DurableWorld({ host: lxd, natsUrls: urls, admin, dir, replicas: cluster === undefined ? 1 : 3 });
  held.world = active;
  await active.launch(instances);
  return {
    lxd,
    world: active,
    nats,
    cluster,
    rounds: async (enricher) =>
      sampleValue(
        await fetch(`http://127.0.0.1:${enricher.port}/metrics`).then(
          (r) => r.text(),
          () => '',
        ),
        'enricher_sweeps_total',
        { result: 'success' },
      ),
    counts: async () => {
      const report = await active.consumer.report();
      return { gaps: report.gaps.length, duplicates: report.duplicates.length, events: report.events, first_gaps: report.gaps.slice(0, 5) };
    },
    stop: async () => {
      removeCleanUp();
      await stop();
    },
  };
}
