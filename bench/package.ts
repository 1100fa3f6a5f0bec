/**
 * `npm run bench:package`: the single executable beside `node dist/bin/rxfleet.js`, in the same
 * run: its size (against the node binary it was made from plus the installed tree it replaces),
 * the start-up to `--version`, and `rxfleet demo`'s run time. One line of JSON per figure.
 *
 * `npm run bench:package` builds dist/ and the executable first (`npm run package -- --no-deb`).
 * The two are run alternately, RUNS times each for `--version` and DEMO_RUNS times for the demo,
 * so a change in the machine's load falls on both; the median of each is printed.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { benchOutput } from './machineLoad';

const root = resolve(__dirname, '..');
const BINARY = join(root, 'build/package/rxfleet');
const SCRIPT = join(root, 'dist/bin/rxfleet.js');
const RUNS = Number(process.env.RUNS ?? 20);
const DEMO_RUNS = Number(process.env.DEMO_RUNS ?? 3);
const DEMO_NODES = Number(process.env.DEMO_NODES ?? 500);
const out = benchOutput('bench:package');

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (n: number) => Math.round(n * 10) / 10;

/** Bytes under `dir`, following no links. */
function treeSize(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += treeSize(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/** Milliseconds `argv` takes to exit 0. */
function timed(argv: string[]): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(argv[0], argv.slice(1), { cwd: root, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`${argv.join(' ')}: exit ${result.status}\n${result.stderr}`);
  return ms;
}

const mb = (bytes: number) => round(bytes / 1e6);
out.print({
  figure: 'size',
  binary_mb: mb(statSync(BINARY).size),
  baseline: 'node + dist + node_modules (this checkout, dev dependencies included)',
  node_mb: mb(statSync(process.execPath).size),
  dist_mb: mb(treeSize(join(root, 'dist'))),
  node_modules_mb: mb(treeSize(join(root, 'node_modules'))),
  bundle_mb: mb(statSync(join(root, 'build/package/rxfleet.cjs')).size),
});

const startBinary: number[] = [];
const startNode: number[] = [];
for (let i = 0; i < RUNS; i += 1) {
  startBinary.push(timed([BINARY, '--version']));
  startNode.push(timed([process.execPath, SCRIPT, '--version']));
}
out.print({
  figure: 'start-up to --version (median ms)',
  runs: RUNS,
  binary_ms: round(median(startBinary)),
  node_dist_ms: round(median(startNode)),
  ratio: Math.round((median(startBinary) / median(startNode)) * 100) / 100,
});

const demoBinary: number[] = [];
const demoNode: number[] = [];
const demo = ['demo', '--nodes', String(DEMO_NODES)];
for (let i = 0; i < DEMO_RUNS; i += 1) {
  demoBinary.push(timed([BINARY, ...demo]));
  demoNode.push(timed([process.execPath, SCRIPT, ...demo]));
}
out.print({
  figure: `rxfleet demo --nodes ${DEMO_NODES}, whole run (median ms)`,
  runs: DEMO_RUNS,
  binary_ms: Math.round(median(demoBinary)),
  node_dist_ms: Math.round(median(demoNode)),
  ratio: Math.round((median(demoBinary) / median(demoNode)) * 100) / 100,
});
out.end();
