import { spawn } from 'node:child_process';
import { Observable } from 'rxjs';
import { EventPayload } from '../../lib/enricher/output/payload';
import { Writable } from 'node:stream';
import pino from 'pino';
import { join, resolve } from 'node:path';
import { parseChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ElectionStore } from '../../lib/election/ElectionStore';
import { Logger, silentLogger } from '../../lib/logger';
import { parseProvisionerConfig, requireValidConfig } from '../../lib/provision/config/config';
import { DaemonTuning, ProvisionerDaemon, startProvisioner } from '../../bin/provision/daemon';
import { FleetKeys, createFleetKeys } from '../../lib/simulate/fleetKeys';
import { SimulatedFleet, SimulatedFleetOptions, startSimulatedFleet } from '../../streams/simulate/simulatedFleet';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';

/** The spec helpers that misbehave on purpose, and the one that echoes its input. */
export const SCRIPTED_HELPER = resolve(__dirname, '../fixtures/helpers/scripted-helper.mjs');
export const ECHO_HELPER = resolve(__dirname, '../fixtures/helpers/echo-helper.mjs');
export const SAMPLE_HELPERS = resolve(__dirname, '../../examples/helpers');
export const MINIMAL_HELPER = join(SAMPLE_HELPERS, 'minimal-helper.mjs');
export const TOKEN = 's3cret-token';

/** What a spec sets up: the provisioner's YAML (given the fleet's keys), the fleet, the daemon's tuning. */
export interface WorldOptions {
  /** YAML lines after the defaults (helper, token, choria_insecure, site, workers: set those with their options). */
  yaml?: string[] | ((keys: FleetKeys) => string[]);
  fleet?: Omit<SimulatedFleetOptions, 'nc' | 'keys'>;
  /** Start the fleet before the daemon (found by discovery) rather than after (found by events). */
  fleetFirst?: boolean;
  /** Do not start the fleet; call `startFleet` later. */
  noFleet?: boolean;
  tuning?: DaemonTuning;
  /** Default 4. */
  workers?: number;
  /** The helper command line. Default the minimal sample helper. */
  helper?: string;
  /** Added to the helper's environment (which has RXFLEET_HELPER_BROKERS set to the server). */
  helperEnv?: Record<string, string>;
  identity?: string;
  electionStore?: ElectionStore;
  /** The daemon's logger. Default silent. */
  logger?: Logger;
  /** Enriched Incus events handed to the daemon in-process (its Incus feed then reads these). */
  incusEvents?: Observable<EventPayload>;
}

/** A daemon and a fleet on one nats-server, each on its own connection. */
export interface ProvisionerWorld {
  daemon: ProvisionerDaemon;
  keys: FleetKeys;
  fleet(): SimulatedFleet;
  startFleet(): Promise<SimulatedFleet>;
  /** The exposition from the daemon's /metrics over HTTP. */
  scrape(): Promise<string>;
  /** One sample's value from /metrics (labels other than those given are ignored). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

/** Defaults fast enough for specs: no retry pause to speak of, short attempts, a free /metrics port. */
export const FAST: DaemonTuning = { retryBackoffMs: [5], rpcTimeoutMs: 1500, monitorPort: 0, electionStartSplayMs: 0 };

/** Starts a fleet and a provisioner against `url`. */
export async function startProvisionerWorld(url: string, options: WorldOptions = {}): Promise<ProvisionerWorld> {
  const keys = await createFleetKeys({ claims: { token: TOKEN, allowUpdates: options.fleet?.upgradable ?? false } });
  const extra = typeof options.yaml === 'function' ? options.yaml(keys) : (options.yaml ?? []);
  const config = requireValidConfig(
    parseProvisionerConfig(
      [
        `helper: ${options.helper ?? MINIMAL_HELPER}`,
        `token: ${TOKEN}`,
        'choria_insecure: true',
        'site: spec',
        `workers: ${options.workers ?? 4}`,
        ...extra,
      ].join('\n'),
    ),
  );
  const identity = options.identity ?? 'prov.example.net';
  const choria = parseChoriaClientConfig(`identity = ${identity}\nplugin.choria.middleware_hosts = ${url}\n`).config;
  const fleetConnection: FleetConnection = await openNatsConnection({ servers: [url], name: 'spec-fleet' });
  let fleet: SimulatedFleet | undefined;
  const startFleet = async (): Promise<SimulatedFleet> => {
    fleet = await startSimulatedFleet({
      nc: fleetConnection.nc,
      nodes: 6,
      token: TOKEN,
      restartDelayMs: 50,
      shutdownDelayMs: 0,
      keys,
      ...options.fleet,
    });
    return fleet;
  };
  if (options.fleetFirst && !options.noFleet) {
    await startFleet();
    await fleet?.whenBooted();
  }
  const daemon = await startProvisioner({
    config,
    choria,
    logger: options.logger ?? silentLogger,
    processMetrics: false,
    ...(options.electionStore !== undefined ? { electionStore: options.electionStore } : {}),
    ...(options.incusEvents !== undefined ? { incusEvents: options.incusEvents } : {}),
    tuning: { ...FAST, helperEnv: { ...process.env, RXFLEET_HELPER_BROKERS: url, ...options.helperEnv }, ...options.tuning },
  });
  if (!options.fleetFirst && !options.noFleet) await startFleet();
  const scrape = async (): Promise<string> => {
    const response = await fetch(`http://127.0.0.1:${daemon.port}/metrics`);
    return response.text();
  };
  return {
    daemon,
    keys,
    fleet: () => {
      if (fleet === undefined) throw new Error('the fleet has not started');
      return fleet;
    },
    startFleet,
    scrape,
    metric: async (name, labels = {}) => sampleValue(await scrape(), name, labels),
    async stop() {
      await daemon.stop({ graceMs: 2000 });
      await fleet?.stop();
      await fleetConnection.drain();
    },
  };
}

/** The value of the first sample of `name` carrying every label given; NaN when there is none. */
export function sampleValue(exposition: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of exposition.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const present = m[3] ?? '';
    if (Object.entries(labels).every(([k, v]) => present.split(',').includes(`${k}="${v}"`))) return Number(m[4]);
  }
  return Number.NaN;
}

/** Runs `promtool check metrics` on an exposition: 0 clean, 1 unparsable, 3 lint findings only. */
export function promtool(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, output }));
    child.stdin.end(text);
  });
}

/** Upstream's counters keep upstream's names, which promtool's linter would like to end in _total. */
export const UPSTREAM_COUNTERS = [
  'choria_provisioner_discovered',
  'choria_provisioner_event_discovered',
  'choria_provisioner_discover_cycles',
  'choria_provisioner_discovery_errors',
  'choria_provisioner_provision_errors',
  'choria_provisioner_provisioned',
  'choria_provisioner_rpc_errors',
  'choria_provisioner_helper_errors',
  'choria_provisioner_helper_shutdown_requests',
];

/**
 * Every counter a provisioner's registry carries under an upstream name without `_total`: the
 * provisioner's and the Incus feed's `incus_discovered`, named beside upstream's `discovered` and
 * `event_discovered`; with `leader_election`, go-choria's election counter too.
 */
export const UPSTREAM_NAMED_COUNTERS = [...UPSTREAM_COUNTERS, 'choria_provisioner_incus_discovered'];

/** go-choria's connector and protocol counters, which a daemon's registry carries under their names too. */
export const CONNECTOR_NAMED_COUNTERS = [
  'choria_connector_initial_connection_attempts',
  'choria_connector_reconnections',
  'choria_connector_connection_closed',
  'choria_connector_errors',
  'choria_protocol_json_parse_failures',
  'choria_protocol_valid',
  'choria_protocol_invalid',
  'choria_protocol_error',
];

const finding = (name: string): string => `${name} counter metrics should have "_total" suffix`;

/** What promtool's linter says of the provisioner's own series (ProvisionerMetrics), upstream's names being kept. */
export const PROVISIONER_NAME_FINDINGS = UPSTREAM_NAMED_COUNTERS.map(finding);

/** What promtool's linter says of a provisioner daemon's exposition without leader_election: its series and go-choria's connector's. */
export const UPSTREAM_NAME_FINDINGS = [...PROVISIONER_NAME_FINDINGS, ...CONNECTOR_NAMED_COUNTERS.map(finding)];

/** The provisioner's own series beside the election's, whose counter keeps go-choria's name. */
export const UPSTREAM_NAME_FINDINGS_WITH_ELECTION = [...PROVISIONER_NAME_FINDINGS, finding('choria_election_campaigns')];

/** A logger that keeps every line's message, for specs that wait on what the daemon says. */
export function capturingLogger(): { logger: Logger; messages: () => string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(line);
      done();
    },
  });
  return {
    logger: pino({ level: 'debug' }, stream),
    messages: () => lines.map((l) => String((JSON.parse(l) as { msg?: string }).msg ?? '')),
  };
}
