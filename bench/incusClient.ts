/**
 * `npm run bench:incus`: the Incus client's own costs, each beside a baseline measured in the same
 * run. One line of JSON per figure.
 *
 * - decode: `decodeLifecycle` on LXD 5.0 and Incus frames, against `JSON.parse` of the same frames
 *   (the floor: every decoder parses).
 * - REST: `getInstance` over a private LXD daemon's unix socket (the spec harness starts it; needs
 *   root and lxd), sequential and 16 at a time, with the client's kept connections against a plain
 *   `http.get` that opens a new connection per call.
 */
import { request } from 'node:http';
import { decodeLifecycle } from '../lib/incus/decodeLifecycle';
import { IncusRestClient } from '../streams/incus/incusRestClient';
import { daemonSpecsUnavailable, startTestDaemon } from '../spec/helpers/testDaemon';
import { benchOutput } from './machineLoad';

// The load average at the start and the end; every figure marked when the machine was busy.
const print = benchOutput('bench:incus').print;
const now = (): number => Number(process.hrtime.bigint()) / 1e6;

const FRAMES = [
  '{"type":"lifecycle","timestamp":"2026-11-29T10:11:26.343811125Z","metadata":{"action":"instance-started","source":"/1.0/instances/ev1","requestor":{"username":"root","protocol":"unix","address":"@"}},"location":"none","project":"default"}\n',
  '{"type":"lifecycle","timestamp":"2026-11-29T10:11:37.886772901Z","metadata":{"action":"instance-renamed","source":"/1.0/instances/pe2?project=p2","context":{"old_name":"pe1"}},"location":"none","project":"p2"}\n',
  '{"type":"lifecycle","timestamp":"2026-11-29T11:02:03.5-05:00","metadata":{"action":"instance-started","source":"/1.0/instances/web1?project=shop","name":"web1","project":"shop"},"location":"node2","project":"shop"}\n',
  '{"type":"lifecycle","timestamp":"2026-11-29T10:11:31.578746292Z","metadata":{"action":"network-updated","source":"/1.0/networks/rxbr1"},"location":"none","project":"default"}\n',
];

function perSecond(count: number, work: (i: number) => unknown): number {
  const start = now();
  for (let i = 0; i < count; i++) work(i);
  return Math.round((count / (now() - start)) * 1000);
}

function benchDecode(): void {
  const count = 1_000_000;
  perSecond(100_000, (i) => decodeLifecycle(FRAMES[i & 3])); // warm-up
  perSecond(100_000, (i) => JSON.parse(FRAMES[i & 3]));
  const baseline = perSecond(count, (i) => JSON.parse(FRAMES[i & 3]));
  const decoded = perSecond(count, (i) => decodeLifecycle(FRAMES[i & 3]));
  print({
    figure: 'decodeLifecycle',
    unit: 'frames/s',
    value: decoded,
    baseline: { what: 'JSON.parse of the same frames', value: baseline },
  });
}

/** One GET over a new connection to the socket, as a client without keep-alive makes it. */
function freshGet(socketPath: string, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, agent: false, headers: { host: 'lxd' } }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end();
  });
}

async function rate(calls: number, concurrency: number, call: () => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls) {
        next++;
        await call();
      }
    }),
  );
  return Math.round((calls / (now() - start)) * 1000);
}

async function benchRest(): Promise<void> {
  const unavailable = daemonSpecsUnavailable('lxd');
  if (unavailable !== undefined) {
    print({ figure: 'getInstance', skipped: unavailable });
    return;
  }
  const lxd = await startTestDaemon('lxd');
  try {
    await lxd.launch('b1');
    const client = new IncusRestClient({ endpoint: { url: lxd.socket } });
    const path = '/1.0/instances/b1?project=default';
    await rate(200, 4, () => client.getInstance('default', 'b1'));
    await rate(200, 4, () => freshGet(lxd.socket, path));
    for (const concurrency of [1, 16]) {
      const calls = 3000;
      const baseline = await rate(calls, concurrency, () => freshGet(lxd.socket, path));
      const kept = await rate(calls, concurrency, () => client.getInstance('default', 'b1'));
      print({
        figure: 'getInstance',
        concurrency,
        unit: 'calls/s',
        value: kept,
        baseline: { what: 'http.get, a new connection per call', value: baseline },
      });
    }
    client.close();
  } finally {
    await lxd.stop();
  }
}

async function main(): Promise<void> {
  benchDecode();
  await benchRest();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
