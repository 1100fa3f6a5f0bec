import { NatsServerProcess, PORT_ATTEMPTS, PortInUseError, freePort, startNatsServer } from './natsServerProcess';
import { definedFields } from '../lib/definedFields';

/** Options for {@link startNatsCluster}. */
export interface NatsClusterOptions {
  /** How many servers. Default 3 (what a Choria site runs). */
  size?: number;
  /** The cluster's name. Default `rxfleet`. */
  name?: string;
  /** Extra configuration text for every server (accounts, users); `{{dir}}` is each server's own directory. */
  config?: string;
  /** The executable. Default `nats-server` on PATH. */
  binary?: string;
  /** How long to wait for the routes and JetStream's meta leader. Default 30 s. */
  readyTimeoutMs?: number;
  /**
   * Run each server under its own group id (this process must be root), so one server's route
   * connections can be cut with `iptables -m owner` (`cutOff` in spec/helpers/natsPartition.ts). Default
   * false.
   */
  partitionable?: boolean;
}

/** One server of a {@link NatsClusterProcess}. */
export interface ClusterServer extends NatsServerProcess {
  /** Its `server_name`, as JetStream names leaders. */
  readonly name: string;
  /** The port its routes listen on. */
  readonly clusterPort: number;
  /** Its monitoring port (`/jsz`, `/routez`). */
  readonly monitorPort: number;
  /** The group id it runs under, when partitionable. */
  readonly gid: number | undefined;
  /** False once it has been killed or stopped, until it is restarted. */
  running(): boolean;
}

/** A private nats-server cluster this process started and will stop. */
export interface NatsClusterProcess {
  readonly name: string;
  readonly servers: readonly ClusterServer[];
  /** Every server's client URL, as a client that may move between them is given them. */
  readonly urls: string[];
  /** The server called `name`. */
  server(name: string): ClusterServer;
  /**
   * Resolves once every running server has its routes to the others and they agree on a JetStream
   * meta leader that is one of them.
   */
  ready(timeoutMs?: number): Promise<void>;
  /** The JetStream meta leader's server name, as a running server reports it (undefined while there is none). */
  metaLeader(): Promise<string | undefined>;
  /** The server name of the leader of `stream` in `account` (undefined while there is none). */
  streamLeader(stream: string, account: string): Promise<string | undefined>;
  /** Stops every server and removes every directory. Idempotent. */
  stop(): Promise<void>;
}

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number };
  account_details?: { name: string; stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
}

async function monitor<T>(server: ClusterServer, path: string): Promise<T | undefined> {
  if (!server.running()) return undefined;
  try {
    const answer = await fetch(`http://127.0.0.1:${server.monitorPort}${path}`, { signal: AbortSignal.timeout(2000) });
    return answer.ok ? ((await answer.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

// Far from the ids a system gives its users and groups; per process, so two suites' clusters differ.
const gidBase = (): number => 60_000 + (process.pid % 1000) * 10;
let clustersStarted = 0;

/**
 * Starts a private nats-server cluster: `size` servers on free loopback ports, each with its own
 * temporary directory and JetStream store, its `server_name`, the same cluster name, and explicit
 * routes to every other (so each one dials the others again after a cut heals). Resolves once the
 * routes are complete and JetStream has a meta leader. Each server is started and removed as
 * {@link startNatsServer}'s private server is: however this process ends, none is left running and
 * no directory is left behind. If one fails to start, those already started are stopped.
 */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsClusterProcess> {
  const { size = 3, name = 'rxfleet', config = '', binary, readyTimeoutMs = 30_000, partitionable = false } = options;
  if (size < 1) throw new RangeError(`a cluster needs at least one server, got ${size}`);
  const gidOffset = gidBase() + (clustersStarted++ % 3) * size;
  const servers: ClusterServer[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  // The ports are picked together (each server's routes name them all), so a port another process
  // takes first means picking them all again.
  for (let attempt = 1; servers.length < size; attempt++) {
    const ports = await Promise.all(
      Array.from({ length: size }, async () => ({ client: await freePort(), cluster: await freePort(), monitor: await freePort() })),
    );
    const routes = ports.map((p) => `nats-route://127.0.0.1:${p.cluster}`).join(', ');
    try {
      for (const [index, port] of ports.entries()) {
        const serverName = `${name}-${index + 1}`;
        const gid = partitionable ? gidOffset + index : undefined;
        const started = await startNatsServer({
          port: port.client,
          serverName,
          ...definedFields({ binary, gid }),
          config: [
            `http: 127.0.0.1:${port.monitor}`,
            `cluster: { name: ${name}, listen: 127.0.0.1:${port.cluster}, routes: [${routes}] }`,
            config,
          ].join('\n'),
        });
        servers.push(clusterServer(started, { name: serverName, clusterPort: port.cluster, monitorPort: port.monitor, gid }));
      }
    } catch (error) {
      await stopAll();
      servers.length = 0;
      if (!(error instanceof PortInUseError) || attempt === PORT_ATTEMPTS) throw error;
    }
  }

  const metaLeader = (): Promise<string | undefined> => metaLeaderOf(servers);
  const ready = (timeoutMs = readyTimeoutMs): Promise<void> => formed(name, servers, timeoutMs);
  try {
    await ready();
  } catch (error) {
    await stopAll();
    throw error;
  }

  return {
    name,
    servers,
    urls: servers.map((s) => s.url),
    server: (wanted) => {
      const found = servers.find((s) => s.name === wanted);
      if (found === undefined) throw new Error(`no server called ${wanted} in cluster ${name}`);
      return found;
    },
    ready,
    metaLeader,
    streamLeader: async (stream, account) => {
      for (const server of servers) {
        const jsz = await monitor<Jsz>(server, `/jsz?accounts=true&streams=true&acc=${encodeURIComponent(account)}`);
        const detail = jsz?.account_details?.find((a) => a.name === account)?.stream_detail?.find((s) => s.name === stream);
        if (detail?.cluster?.leader) return detail.cluster.leader;
      }
      return undefined;
    },
    stop: stopAll,
  };
}

/** A started server as a member of its cluster: its names and ports, and whether it runs now. */
function clusterServer(
  started: NatsServerProcess,
  member: { name: string; clusterPort: number; monitorPort: number; gid: number | undefined },
): ClusterServer {
  let up = true;
  return {
    get url() {
      return started.url;
    },
    get port() {
      return started.port;
    },
    get dir() {
      return started.dir;
    },
    get pid() {
      return started.pid;
    },
    ...member,
    running: () => up,
    stop: async () => {
      up = false;
      await started.stop();
    },
    kill: async () => {
      up = false;
      await started.kill();
    },
    restart: async () => {
      await started.restart();
      up = true;
    },
  };
}

/** The JetStream meta leader's server name, as the first running server that knows one reports it. */
async function metaLeaderOf(servers: readonly ClusterServer[]): Promise<string | undefined> {
  for (const server of servers) {
    const leader = (await monitor<Jsz>(server, '/jsz'))?.meta_cluster?.leader;
    if (leader) return leader;
  }
  return undefined;
}

/**
 * Resolves once every running server has its routes to the others and they agree on a JetStream
 * meta leader that is one of them, asking every 100 ms; rejects after `timeoutMs` with what each said.
 */
async function formed(name: string, servers: readonly ClusterServer[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const up = servers.filter((s) => s.running());
    const views = await Promise.all(
      up.map(async (s) => ({
        routes: (await monitor<{ num_routes?: number }>(s, '/routez'))?.num_routes ?? -1,
        leader: (await monitor<Jsz>(s, '/jsz'))?.meta_cluster?.leader,
      })),
    );
    const leaders = new Set(views.map((v) => v.leader));
    const [leader] = leaders;
    if (views.every((v) => v.routes >= up.length - 1) && leaders.size === 1 && up.some((s) => s.name === leader)) return;
    if (Date.now() > deadline)
      throw new Error(`the nats-server cluster ${name} did not form within ${timeoutMs} ms: ${JSON.stringify(views)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
