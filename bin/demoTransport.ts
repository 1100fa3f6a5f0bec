import { ClaimStore } from '../lib/provision/claims/claims';
import { ElectionStore } from '../lib/election/ElectionStore';
import { Logger } from '../lib/logger';
import { createClaimsBucket } from '../streams/claims/claimsBucket';
import { MemoryClaimBucket } from '../streams/memory/memoryClaimBucket';
import { createElectionBucket } from '../streams/election/electionBucket';
import { MemoryElectionBucket } from '../streams/memory/memoryElectionStore';
import { MemoryNatsServer, memoryFleetConnection } from '../streams/memory/memoryNats';
import { FleetConnection, openNatsConnection } from '../streams/natsConnection';
import { NatsServerProcess, natsServerAvailable, startNatsServer } from '../streams/natsServerProcess';
import { startNatsCluster } from '../streams/natsClusterProcess';

/** How the demo's parts talk: a private nats-server, or the in-process transport. */
export type DemoTransport = 'auto' | 'nats' | 'memory' | 'cluster';

const BUCKET_TTL_MS = 10_000;
// Claims outlive the demo's queue of sightings (older ones are refused,
// docs/provisioner/high-availability.md).
const CLAIMS_TTL_MS = 120_000;

/** The transport the demo runs on, with what it must stop. */
export interface Transport {
  kind: 'nats' | 'memory';
  /** Every server, comma-separated (as `plugin.choria.middleware_hosts` takes them). */
  url: string;
  /** How the demo says where it runs. */
  describe: string;
  connect(name: string): Promise<FleetConnection>;
  electionStore(): ElectionStore | undefined;
  claimStore(): ClaimStore | undefined;
  stop(): Promise<void>;
}

async function natsTransport(logger: Logger): Promise<Transport> {
  const server: NatsServerProcess = await startNatsServer({ jetstream: true });
  let admin: FleetConnection | undefined;
  try {
    admin = await openNatsConnection({ servers: [server.url], name: 'rxfleet-demo-broker' }, logger);
    // What a Choria broker with Streams does at start: the election bucket.
    await createElectionBucket(admin.nc, { ttlMs: BUCKET_TTL_MS });
    // What a site's administrator does once for active-active: the claims bucket.
    await createClaimsBucket(admin.nc, { ttlMs: CLAIMS_TTL_MS });
    await admin.drain();
  } catch (error) {
    // Closed before the server goes, or its reconnect loop would keep the demo alive.
    await admin?.nc.close();
    await server.stop();
    throw error;
  }
  return {
    kind: 'nats',
    url: server.url,
    describe: `a private nats-server (${server.url})`,
    connect: (name) => openNatsConnection({ servers: [server.url], name, inboxPrefix: 'provisioning.reply' }, logger),
    electionStore: () => undefined,
    claimStore: () => undefined,
    stop: () => server.stop(),
  };
}

/**
 * A private three-server cluster (DECISIONS P20): both buckets replicated on all three, and each
 * connection the demo makes (the fleet, each provisioner) on the next server in turn, so the parts
 * are spread across them; the cluster tells each client the others, so any can move.
 */
async function clusterTransport(logger: Logger): Promise<Transport> {
  const cluster = await startNatsCluster();
  let admin: FleetConnection | undefined;
  try {
    admin = await openNatsConnection({ servers: cluster.urls, name: 'rxfleet-demo-broker' }, logger);
    await createElectionBucket(admin.nc, { ttlMs: BUCKET_TTL_MS, replicas: cluster.servers.length });
    await createClaimsBucket(admin.nc, { ttlMs: CLAIMS_TTL_MS, replicas: cluster.servers.length });
    await admin.drain();
  } catch (error) {
    await admin?.nc.close();
    await cluster.stop();
    throw error;
  }
  let next = 0;
  return {
    kind: 'nats',
    url: cluster.urls.join(','),
    describe: `a private three-server nats-server cluster (${cluster.urls.join(', ')})`,
    connect: (name) =>
      openNatsConnection({ servers: [cluster.urls[next++ % cluster.urls.length]], name, inboxPrefix: 'provisioning.reply' }, logger),
    electionStore: () => undefined,
    claimStore: () => undefined,
    stop: () => cluster.stop(),
  };
}

function memoryTransport(): Transport {
  const server = new MemoryNatsServer();
  const bucket = new MemoryElectionBucket({ ttlMs: BUCKET_TTL_MS });
  const claims = new MemoryClaimBucket({ ttlMs: CLAIMS_TTL_MS });
  return {
    kind: 'memory',
    url: 'memory://',
    describe: 'the in-process transport',
    connect: async (name) => memoryFleetConnection(server.connect({ name, inboxPrefix: 'provisioning.reply' })),
    electionStore: () => bucket.store(),
    claimStore: () => claims.store(),
    stop: async () => undefined,
  };
}

/**
 * The transport `rxfleet demo` runs on: a private nats-server (`nats`, or `auto` when
 * `nats-server` is on PATH), or the in-process one; `auto` without nats-server says so through
 * `print` in one line. The caller stops it.
 */
export async function demoTransport(asked: DemoTransport, logger: Logger, print: (line: string) => void): Promise<Transport> {
  if (asked === 'cluster') return clusterTransport(logger);
  let kind: 'nats' | 'memory' = asked === 'memory' ? 'memory' : 'nats';
  if (asked === 'auto' && !natsServerAvailable()) {
    print('nats-server is not on PATH (install it with `apt-get install nats-server`): running on an in-process transport instead');
    kind = 'memory';
  }
  return kind === 'nats' ? natsTransport(logger) : memoryTransport();
}
