/**
 * `npm run bench:cli`: how long an operator's command takes, from the npm install (`node
 * dist/bin/rxfleet.js`) and from the single binary (`build/package/rxfleet`), beside a bare Node
 * start (`node -e 0`) measured in the same run. The goal (issue 36): `--version`, `--help`,
 * `status`, `history` and `validate` within 1.5x a bare Node start, each command loading only what
 * it uses.
 *
 * Every command is run RUNS times (default 20), all of them in turn each round, so a change in the
 * machine's load falls on each alike; the median of each is printed with its ratio to the bare
 * start. Each command's first run, before those, has no code cache yet (bin/compileCache.ts; the
 * bench keeps its caches in its own directory) and writes it: that run is printed on its own (for
 * the first command of each cache only).
 * `status` and `history` read a records stream on a private nats-server the bench fills first (an
 * instance record and NODES node records, default 200), so they connect, ask and print as on a
 * site; `validate` checks examples/provisioner-minimal.yaml. One JSON line per figure; the load
 * average first and last (bench/machineLoad.ts).
 *
 * `npm run bench:cli` builds dist/ and the binary first (`npm run package -- --no-deb`); a missing
 * binary is skipped with a line saying so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { cacheKeyOf } from '../bin/compileCache';
import { CACHED_COMMANDS, COMMAND_NAMES } from '../bin/commandNames';
import { startNatsServer } from '../streams/natsServerProcess';
import { benchOutput } from './machineLoad';

const root = resolve(__dirname, '..');
const BINARY = join(root, 'build/package/rxfleet');
const SCRIPT = join(root, 'dist/bin/rxfleet.js');
const RUNS = Number(process.env.RUNS ?? 20);
const NODES = Number(process.env.NODES ?? 200);
const STREAM = 'RXFLEET_PROVISIONER_RECORDS';
const SUBJECT = 'rxfleet.provisioner.records';
const out = benchOutput('bench:cli');

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (n: number): number => Math.round(n * 10) / 10;

/** Milliseconds `argv` takes to exit (with any code: `status` on an empty fleet is 1 too, and as fast). */
function timed(argv: string[], env: NodeJS.ProcessEnv = process.env): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(argv[0], argv.slice(1), { cwd: root, env, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.error !== undefined) throw result.error;
  if (result.status !== 0 && result.status !== 1) throw new Error(`${argv.join(' ')}: exit ${result.status}\n${result.stderr}`);
  return ms;
}

/** Fills a records stream as a running provisioner would: one instance record, then a cycle record per node. */
async function fill(url: string): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: STREAM, subjects: [`${SUBJECT}.>`], max_msgs_per_subject: 50 });
    const js = jetstream(nc);
    const now = new Date().toISOString();
    await js.publish(
      `${SUBJECT}.instance.bench.example.net`,
      JSON.stringify({
        type: 'instance',
        v: 1,
        instance: 'bench.example.net',
        site: 'bench',
        version: '0.0.0',
        mode: 'single',
        leader: false,
        paused: false,
        state: 'running',
        connection: 'connected',
        workers: 4,
        held: 0,
        waiting: { count: 0 },
        inFlight: { count: 0 },
        failing: { count: 0 },
        backoffCeilingMs: 3_600_000,
        startedAt: now,
        at: now,
        every: 10_000,
      }),
    );
    for (let i = 1; i <= NODES; i++) {
      const node = `node-${i}.example.net`;
      await js.publish(
        `${SUBJECT}.node.${node}`,
        JSON.stringify({
          type: 'cycle',
          v: 1,
          node,
          instance: 'bench.example.net',
          site: 'bench',
          sighting: { via: 'discovery', at: now },
          started: now,
          ended: now,
          ms: 120,
          outcome: 'provisioned',
          steps: ['inventory', 'helper', 'configure', 'restart'].map((step) => ({ step, outcome: 'ok', ms: 30 })),
        }),
      );
    }
  } finally {
    await nc.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-bench-cli-'));
  const server = await startNatsServer();
  try {
    await fill(server.url);
    const choria = join(dir, 'choria.cfg');
    writeFileSync(choria, `identity = bench.example.net\nplugin.choria.middleware_hosts = ${server.url}\n`);
    const commands: Record<string, string[]> = {
      '--version': ['--version'],
      '--help': ['--help'],
      'status --help': ['status', '--help'],
      'history --help': ['history', '--help'],
      'validate --help': ['validate', '--help'],
      status: ['status', '--nats', server.url],
      'status --json': ['status', '--nats', server.url, '--json'],
      'history NODE': ['history', 'node-1.example.net', '--nats', server.url],
      'validate --config': ['validate', '--config', join(root, 'examples/provisioner-minimal.yaml'), '--choria-config', choria],
    };
    const runners: Record<string, string[]> = { npm: [process.execPath, SCRIPT] };
    if (existsSync(BINARY)) runners.binary = [BINARY];
    else out.print({ note: `no ${BINARY}: run npm run package -- --no-deb first; only the npm install is measured` });
    const env = { ...process.env, RXFLEET_COMPILE_CACHE: join(dir, 'compile-cache') };
    const first = new Map<string, number>();
    for (const [runner, argv] of Object.entries(runners))
      for (const [name, args] of Object.entries(commands)) first.set(`${runner} ${name}`, timed([...argv, ...args], env));
    const times = new Map<string, number[]>();
    const note = (key: string, ms: number): void => void times.set(key, [...(times.get(key) ?? []), ms]);
    for (let i = 0; i < RUNS; i++) {
      note('bare', timed([process.execPath, '-e', '0']));
      for (const [runner, argv] of Object.entries(runners))
        for (const [name, args] of Object.entries(commands)) note(`${runner} ${name}`, timed([...argv, ...args], env));
    }
    const bare = median(times.get('bare')!);
    out.print({ figure: 'bare node start (node -e 0), median ms', runs: RUNS, ms: round(bare) });
    // `status --json` shares `status`'s cache, written by the run before it: not a first run.
    const firstOfKey = new Map<string, string>();
    for (const [name, args] of Object.entries(commands)) {
      const key = cacheKeyOf(args, COMMAND_NAMES, CACHED_COMMANDS) ?? name;
      if (!firstOfKey.has(key)) firstOfKey.set(key, name);
    }
    for (const [runner] of Object.entries(runners))
      for (const name of firstOfKey.values()) {
        const cold = first.get(`${runner} ${name}`)!;
        out.print({
          figure: `rxfleet ${name} from the ${runner === 'npm' ? 'npm install' : 'single binary'}, its first run (no code cache yet: it writes one), ms`,
          runs: 1,
          ms: round(cold),
          ratio_to_bare_node: Math.round((cold / bare) * 100) / 100,
        });
      }
    for (const [runner] of Object.entries(runners))
      for (const name of Object.keys(commands)) {
        const ms = median(times.get(`${runner} ${name}`)!);
        out.print({
          figure: `rxfleet ${name} from the ${runner === 'npm' ? 'npm install (node dist/bin/rxfleet.js)' : 'single binary'}, median ms`,
          runs: RUNS,
          ms: round(ms),
          ratio_to_bare_node: Math.round((ms / bare) * 100) / 100,
          goal_ratio: 1.5,
        });
      }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    out.end();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
