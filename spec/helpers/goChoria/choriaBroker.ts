import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanUpOnExit } from '../../../streams/exitCleanup';
import { freePort } from '../../../streams/natsServerProcess';
import { SiteDir } from '../choriaSite';
import { waitFor } from '../waitFor';
import { choriaBinary } from '../goPeers';
import { SiteCredentials } from './siteCredentials';

/** Options for {@link startChoriaBroker}. */
export interface ChoriaBrokerOptions {
  /** `plugin.choria.network.provisioning.client_password`: the provisioner user's password. */
  provisionerPassword: string;
  /** `plugin.choria.network.stream.leader_election_ttl`, the election bucket's max age. Default 10s (go-choria: 1m). */
  electionTtl?: string;
  /** Lines appended to the broker's configuration. */
  extra?: string[];
}

/** A real Choria Broker (`choria broker run`) on a free loopback port, with Choria Streams on. */
export interface ChoriaBroker {
  /** `nats://127.0.0.1:<port>`: TLS is required, the scheme is what go-choria configurations write. */
  readonly url: string;
  readonly port: number;
  /** Its log (logrus JSON lines). */
  log(): string;
  /** SIGKILL, keeping its store, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store (after `kill`). */
  restart(): Promise<void>;
  /** SIGTERM (SIGKILL after 5 s); idempotent. */
  stop(): Promise<void>;
}

function brokerConfig(site: SiteDir, port: number, credentials: SiteCredentials, options: ChoriaBrokerOptions): string {
  const lines = [
    'plugin.choria.broker_network = true',
    'plugin.choria.network.listen_address = 127.0.0.1',
    `plugin.choria.network.client_port = ${port}`,
    // No cluster: a single broker.
    'plugin.choria.network.peer_port = 0',
    `plugin.choria.network.provisioning.client_password = ${options.provisionerPassword}`,
    `plugin.choria.network.stream.store = ${join(site.path, 'streams')}`,
    // Replicas given, so the broker makes its streams (the election bucket among them) at once
    // rather than after its random 10-70 s wait for cluster peers.
    'plugin.choria.network.stream.event_replicas = 1',
    'plugin.choria.network.stream.machine_replicas = 1',
    'plugin.choria.network.stream.advisory_replicas = 1',
    'plugin.choria.network.stream.leader_election_replicas = 1',
    `plugin.choria.network.stream.leader_election_ttl = ${options.electionTtl ?? '10s'}`,
    'identity = broker.example.net',
    'loglevel = info',
    `logfile = ${join(site.path, 'broker.log')}`,
    'plugin.choria.stats_port = 0',
  ];
  if (credentials.flow === 'x509') {
    lines.push(
      'plugin.security.provider = file',
      `plugin.security.file.certificate = ${credentials.broker.cert}`,
      `plugin.security.file.key = ${credentials.broker.key}`,
      `plugin.security.file.ca = ${credentials.ca}`,
      `plugin.choria.network.provisioning.signer_cert = ${credentials.signer!.cert}`,
    );
  } else {
    lines.push(
      'plugin.security.provider = choria',
      `plugin.security.choria.certificate = ${credentials.broker.cert}`,
      `plugin.security.choria.key = ${credentials.broker.key}`,
      `plugin.security.choria.ca = ${credentials.ca}`,
      `plugin.security.choria.token_file = ${credentials.brokerIdentity!.jwt}`,
      `plugin.security.choria.seed_file = ${credentials.brokerIdentity!.seed}`,
      'plugin.security.issuer.names = choria',
      `plugin.security.issuer.choria.public = ${credentials.issuer!.publicKey}`,
    );
  }
  return [...lines, ...(options.extra ?? [])].join('\n') + '\n';
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/**
 * Starts a Choria Broker for `credentials`' flow in `site`: TLS as a site has it, the provisioning
 * account on (the provisioner user's password, and the provisioning JWT's signer or the issuer),
 * Choria Streams with the election bucket. Resolves once the election bucket's stream exists.
 */
export async function startChoriaBroker(site: SiteDir, credentials: SiteCredentials, options: ChoriaBrokerOptions): Promise<ChoriaBroker> {
  const port = await freePort();
  const config = site.file('broker.conf', brokerConfig(site, port, credentials, options));
  const logFile = join(site.path, 'broker.log');
  let child: ChildProcess | undefined;
  const forget = cleanUpOnExit(() => child?.kill('SIGKILL'));

  const launch = async (): Promise<void> => {
    const out = openSync(join(site.path, 'broker.out'), 'a');
    const started = spawn(choriaBinary(), ['broker', 'run', '--config', config], { stdio: ['ignore', out, out], cwd: site.path });
    closeSync(out);
    child = started;
    const since = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : 0;
    await waitFor(
      () => {
        if (started.exitCode !== null)
          throw new Error(
            `choria broker exited with ${started.exitCode}: ${readFileSync(join(site.path, 'broker.out'), 'utf8').slice(-500)}`,
          );
        return existsSync(logFile) && readFileSync(logFile, 'utf8').slice(since).includes('KV_CHORIA_LEADER_ELECTION');
      },
      'the Choria Broker to make its election bucket',
      20_000,
    );
  };

  try {
    await launch();
  } catch (error) {
    child?.kill('SIGKILL');
    forget();
    throw error;
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async kill() {
      if (child !== undefined) {
        child.kill('SIGKILL');
        await exited(child);
      }
    },
    restart: launch,
    async stop() {
      forget();
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const running = child;
      running.kill('SIGTERM');
      const timer = setTimeout(() => running.kill('SIGKILL'), 5000);
      await exited(running);
      clearTimeout(timer);
    },
  };
}
