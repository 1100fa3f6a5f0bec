/**
 * `npm run bench:versus-go`: the Go provisioner (choria-io/provisioner) and rxfleet on the same
 * fleets, with the same helper and the same number of workers, one after the other in one run:
 *
 * - (a) REAL real go-choria servers (scripts/go-peers.conf's go-choria, default 30) through a real
 *   Choria Broker in upstream's x509 flow (`spec/helpers/goChoria/`): each server makes its key and
 *   CSR, the helper signs it with the site's CA (`spec/fixtures/helpers/pki-helper.mjs`), configure
 *   and restart; a fresh site for every run;
 * - (b) SIMULATED servers from `rxfleet simulate` (default 10,000) on a private nats-server with the
 *   `sh` helper of `bench:provision` (`bench/helpers/sh-helper.sh`).
 *
 * rxfleet runs with a helper per node and with the persistent helper (the same helper's persistent
 * form); the Go provisioner has only the first. Every figure is read from outside the provisioner,
 * the same way for both: nodes/s from its start to the fleet fully configured (each real server's
 * configuration rewritten, or the simulated fleet's own count), time to the first configure, CPU
 * seconds per node and peak RSS of the provisioner's own process (/proc; helpers not included),
 * failed cycles (`choria_provisioner_provision_errors`, a metric both serve) and duplicates (a
 * server configured twice). The load average at the start and end, and the command, come first
 * and last.
 *
 * The Go provisioner is `.cache/peers/provisioner-<version>/provisioner` (scripts/go-peers.sh).
 * Where it is not installed (the module proxy this project's machines reach refuses
 * github.com/choria-io/provisioner), its rows say so and only rxfleet's are measured.
 *
 * REAL (30), SIMULATED (10000), WORKERS (16), RUNS (go,rxfleet-per-node,rxfleet-persistent),
 * FLEETS (real,simulated), RUN_TIMEOUT_MINUTES (20) change the run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawn } from 'node:child_process';
import { freePort, startNatsServer } from '../streams/natsServerProcess';
import { startChoriaSite } from '../spec/helpers/goChoria/choriaSite';
import { sampleValue } from '../spec/helpers/provisioner';
import { RXFLEET_BIN, RxfleetProcess, startRxfleet } from '../spec/helpers/rxfleetProcess';
import { waitFor } from '../spec/helpers/waitFor';
import { now, onInterrupt, print, printFooter, printHeader, processUsage, round, start, stop, tracked } from './provisionHarness';

const REAL = Number(process.env.REAL ?? 30);
const SIMULATED = Number(process.env.SIMULATED ?? 10_000);
const WORKERS = Number(process.env.WORKERS ?? 16);
const RUNS = (process.env.RUNS ?? 'go,rxfleet-per-node,rxfleet-persistent').split(',');
const FLEETS = (process.env.FLEETS ?? 'real,simulated').split(',');
const RUN_TIMEOUT_MS = Number(process.env.RUN_TIMEOUT_MINUTES ?? 20) * 60_000;
const ROOT = resolve(__dirname, '..');
const PKI_HELPER = join(ROOT, 'spec/fixtures/helpers/pki-helper.mjs');
const SH_HELPER = join(ROOT, 'bench/helpers/sh-helper.sh');
const SH_PERSISTENT = join(ROOT, 'examples/helpers/persistent-helper.sh');

/** The Go provisioner's binary, or why there is none. */
function goProvisioner(): { binary: string } | { missing: string } {
  const conf = readFileSync(join(ROOT, 'scripts/go-peers.conf'), 'utf8');
  const version = /^PROVISIONER_VERSION=(\S+)$/m.exec(conf)?.[1] ?? '';
  const binary = join(ROOT, '.cache/peers', `provisioner-${version}`, 'provisioner');
  if (existsSync(binary)) return { binary };
  return {
    missing: `github.com/choria-io/provisioner@${version} is not installed (scripts/go-peers.sh): the Go module proxy here refuses it (403 Forbidden)`,
  };
}

/** A provisioner process, whichever it is: its pid, its /metrics port, and how to stop it. */
interface Provisioner {
  pid: number;
  stop(): Promise<void>;
}

function startProvisioner(kind: string, config: string, choria: string, env: Record<string, string>): Provisioner {
  if (kind === 'go') {
    const go = goProvisioner();
    if (!('binary' in go)) throw new Error(go.missing);
    const child = spawn(go.binary, ['run', '--config', config, '--choria-config', choria], {
      stdio: 'ignore',
      env: { ...process.env, ...env },
    });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    return {
      pid: child.pid!,
      stop: async () => {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(killer);
      },
    };
  }
  const rxfleet = tracked(startRxfleet(['provision', '--config', config, '--choria-config', choria], { env }));
  return { pid: rxfleet.child.pid!, stop: () => stop(rxfleet) };
}

const provisionErrors = async (port: number): Promise<number> =>
  sampleValue(
    await fetch(`http://127.0.0.1:${port}/metrics`).then(
      (r) => r.text(),
      () => '',
    ),
    'choria_provisioner_provision_errors',
    { site: 'bench' },
  );

interface Figures {
  nodesPerSecond: number;
  firstConfigureMs: number;
  cpuMsPerNode: number;
  peakRssMiB: number;
  failedCycles: number;
  duplicates: number;
}

/** (a): a fresh real site per run, the provisioner on it, until every server's configuration is rewritten. */
async function realRun(kind: string): Promise<Figures> {
  const site = await startChoriaSite({ flow: 'x509', servers: REAL, electionTtl: '10s' });
  onInterrupt(() => site.stop());
  try {
    const port = await freePort();
    const persistent = kind === 'rxfleet-persistent';
    const config = site.dir.file(
      `${kind}.yaml`,
      [
        `helper: ${PKI_HELPER}${persistent ? ' --persistent' : ''}`,
        `workers: ${WORKERS}`,
        'site: bench',
        `monitor_port: ${port}`,
        ...site.provisionerYaml(),
        ...(persistent ? ['rxfleet: {helper_mode: persistent}'] : []),
        '',
      ].join('\n'),
    );
    const configured = (): number[] =>
      site.servers.servers.flatMap((s) =>
        readFileSync(s.configFile, 'utf8').includes('plugin.choria.server.provision=false') ? [statSync(s.configFile).mtimeMs] : [],
      );
    const startedAt = Date.now();
    const provisioner = startProvisioner(kind, config, site.provisionerChoriaConfig, site.helper.env);
    try {
      await waitFor(() => configured().length === REAL, `all ${REAL} real servers configured`, RUN_TIMEOUT_MS);
      const done = configured();
      const usage = processUsage(provisioner.pid);
      const elapsed = Math.max(...done) - startedAt;
      const rewrites = site.servers.servers.map((s) => s.log().split('Rewriting configuration file').length - 1);
      return {
        nodesPerSecond: round(REAL / (elapsed / 1000)),
        firstConfigureMs: Math.round(Math.min(...done) - startedAt),
        cpuMsPerNode: round((usage.cpuSeconds * 1000) / REAL),
        peakRssMiB: usage.peakRssMiB,
        failedCycles: await provisionErrors(port),
        duplicates: rewrites.filter((n) => n > 1).length,
      };
    } finally {
      await provisioner.stop();
    }
  } finally {
    await site.stop();
  }
}

/** (b): a simulated fleet on a private nats-server, until the fleet's own count says every node is configured. */
async function simulatedRun(kind: string, dir: string): Promise<Figures> {
  const server = await startNatsServer({ jetstream: false });
  onInterrupt(() => server.stop());
  const fleet: RxfleetProcess = start([
    'simulate',
    '--nats',
    server.url,
    '--nodes',
    String(SIMULATED),
    '--token',
    'bench-token',
    '--restart-delay',
    '0',
    '--json',
    '--report-every',
    '250ms',
    '--log-level',
    'error',
  ]);
  try {
    await fleet.next((l) => l.type === 'ready');
    const port = await freePort();
    const persistent = kind === 'rxfleet-persistent';
    const config = join(dir, `${kind}-simulated.yaml`);
    writeFileSync(
      config,
      [
        `helper: ${persistent ? SH_PERSISTENT : SH_HELPER}`,
        'token: bench-token',
        'choria_insecure: true',
        `workers: ${WORKERS}`,
        'site: bench',
        `monitor_port: ${port}`,
        ...(persistent ? ['rxfleet: {helper_mode: persistent}'] : []),
        '',
      ].join('\n'),
    );
    const choria = join(dir, 'simulated-choria.cfg');
    writeFileSync(choria, `identity = bench-provisioner.example.net\nplugin.choria.middleware_hosts = ${server.url}\n`);
    const startedAt = now();
    let first = 0;
    const provisioner = startProvisioner(kind, config, choria, { RXFLEET_HELPER_BROKERS: server.url });
    try {
      const report = (): Record<string, unknown> | undefined => [...fleet.lines].reverse().find((l) => typeof l.configured === 'number');
      await waitFor(
        () => {
          // Distinct nodes configured: configure calls less those on a node configured before.
          const configured = Number(report()?.configured ?? 0) - Number(report()?.duplicates ?? 0);
          if (first === 0 && configured > 0) first = now();
          return configured >= SIMULATED;
        },
        `all ${SIMULATED} simulated servers configured`,
        RUN_TIMEOUT_MS,
      );
      const elapsed = now() - startedAt;
      const usage = processUsage(provisioner.pid);
      return {
        nodesPerSecond: round(SIMULATED / (elapsed / 1000)),
        firstConfigureMs: Math.round(first - startedAt),
        cpuMsPerNode: round((usage.cpuSeconds * 1000) / SIMULATED, 3),
        peakRssMiB: usage.peakRssMiB,
        failedCycles: await provisionErrors(port),
        duplicates: Number(report()?.duplicates ?? 0),
      };
    } finally {
      await provisioner.stop();
    }
  } finally {
    await stop(fleet);
    await server.stop();
  }
}

async function main(): Promise<void> {
  printHeader('bench/versusGo.ts', ['REAL', 'SIMULATED', 'WORKERS', 'RUNS', 'FLEETS', 'RUN_TIMEOUT_MINUTES'], {
    real: REAL,
    simulated: SIMULATED,
    workers: WORKERS,
    rxfleet: RXFLEET_BIN,
  });
  const go = goProvisioner();
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-versus-go-'));
  onInterrupt(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    for (const fleet of FLEETS) {
      const results: Record<string, Figures> = {};
      for (const kind of RUNS) {
        if (kind === 'go' && 'missing' in go) {
          print({ fleet, provisioner: 'go', skipped: go.missing });
          continue;
        }
        const figures = fleet === 'real' ? await realRun(kind) : await simulatedRun(kind, dir);
        results[kind] = figures;
        print({ fleet, provisioner: kind, nodes: fleet === 'real' ? REAL : SIMULATED, ...figures });
      }
      const base = results.go;
      if (base !== undefined) {
        for (const kind of ['rxfleet-per-node', 'rxfleet-persistent'] as const) {
          const r = results[kind];
          if (r === undefined) continue;
          const goal = kind === 'rxfleet-per-node' ? 1 : 10;
          print({
            fleet,
            compare: `${kind} / go`,
            nodes_per_second: round(r.nodesPerSecond / base.nodesPerSecond, 2),
            nodes_per_second_goal: `>= ${goal}x`,
            cpu_per_node: round(r.cpuMsPerNode / base.cpuMsPerNode, 2),
            cpu_per_node_goal: kind === 'rxfleet-per-node' ? '<= 1x' : 'none',
          });
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    printFooter();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
