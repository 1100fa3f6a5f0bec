/**
 * `npm run bench:wire`: the Choria wire layer over a private nats-server, one JSON line per figure.
 *
 * - RPC round trips per second through the codec and the RPC client (`rpcutil#inventory` to a
 *   simulated node, every layer encoded, validated and hashed on both sides) with 1 and 64 in
 *   flight, beside raw nats.js request/reply of a payload of the same size and beside the
 *   protocol's own floor (`wireFloor.ts`: the layers' bare JSON, base64 and hash on both sides over
 *   raw request/reply, nothing checked), all measured in the same run. The simulated node shares
 *   this process, so each figure carries both sides' work.
 * - Broadcast discovery of 1k, 10k, 20k and 100k simulated nodes: how long the round took and how
 *   many were found, against the goal of every node in the one 2 s window a round may last. The fleet runs in its own process (`rxfleet simulate`), as a real fleet would, so
 *   its reply burst does not share this process's event loop (the built `dist/`, so the script builds first). A round always lasts at least the
 *   300 ms idle window after the last reply.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { firstValueFrom } from 'rxjs';
import { PROVISION_RPCS } from '../lib/choria/agents';
import { startSimulatedFleet } from '../streams/simulate/simulatedFleet';
import { broadcastDiscovery } from '../streams/choria/discovery';
import { ChoriaRpcClient } from '../streams/choria/rpcClient';
import { openNatsConnection } from '../streams/natsConnection';
import { startNatsServer } from '../streams/natsServerProcess';
import { benchOutput } from './machineLoad';
import { protocolFloor } from './wireFloor';

const RPC_SECONDS = Number(process.env.RPC_SECONDS ?? 5);
const DISCOVERY_SIZES = (process.env.DISCOVERY_SIZES ?? '1000,10000,20000,100000').split(',').map(Number);
const DISCOVERY_ROUNDS = Number(process.env.DISCOVERY_ROUNDS ?? 3);

const now = (): number => Number(process.hrtime.bigint()) / 1e6;
// The load average at the start and the end; every figure marked when the machine was busy.
const print = benchOutput('bench:wire').print;

/** Runs `call` with `inFlight` always outstanding for `seconds`; returns completed calls per second. */
async function roundTrips(inFlight: number, seconds: number, call: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const stopAt = now() + seconds * 1000;
  const start = now();
  const lane = async (): Promise<void> => {
    while (now() < stopAt) {
      await call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return Math.round((done / (now() - start)) * 1000);
}

function simulateProcess(url: string, nodes: number): Promise<{ child: ChildProcess; stop: () => Promise<void> }> {
  // The built command, exactly as a user runs it (`npm run bench:wire` builds first).
  const child = spawn(
    process.execPath,
    [join(__dirname, '../dist/bin/rxfleet.js'), 'simulate', '--nats', url, '--nodes', String(nodes), '--json', '--report-every', '0'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if ((JSON.parse(line) as { type: string }).type === 'ready') {
        resolve({
          child,
          stop: async () => {
            child.kill('SIGTERM');
            await exited;
          },
        });
      }
    });
  });
}

async function main(): Promise<void> {
  print({ node: process.version, cpus: cpus().length, rpc_seconds: RPC_SECONDS });
  const server = await startNatsServer({ jetstream: false });
  try {
    const provisioner = await openNatsConnection({ servers: [server.url], inboxPrefix: 'provisioning.reply', name: 'bench-provisioner' });
    const fleetSide = await openNatsConnection({ servers: [server.url], name: 'bench-fleet' });

    // Raw nats.js: an echo responder, a payload the size of a Choria inventory request.
    const client = new ChoriaRpcClient({ nc: provisioner.nc, identity: 'bench-provisioner.example.net' });
    const fleet = await startSimulatedFleet({ nc: fleetSide.nc, nodes: 64 });
    const sample = await firstValueFrom(client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {}));
    const requestBytes = 900;
    const payload = new Uint8Array(requestBytes).fill(120);
    const replyBytes = JSON.stringify(sample).length * 2;
    const reply = new Uint8Array(replyBytes).fill(121);
    fleetSide.nc.subscribe('bench.echo', { callback: (_e, m) => void m.respond(reply) });
    await fleetSide.nc.flush();
    const floor = protocolFloor(provisioner.nc, fleetSide.nc, 'bench.floor', (sample as { data: unknown }).data);
    await floor.ready;
    let floorIds = 0;
    const floorCall = (): Promise<void> => floor.call(`floor-${floorIds++}`, `node-${(floorIds % 64) + 1}.example.net`);

    // Warm-up: both paths, so neither figure measures the JIT compiling it.
    await roundTrips(8, 1, () => provisioner.nc.request('bench.echo', payload, { timeout: 5000 }));
    await roundTrips(8, 1, () => firstValueFrom(client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {})));
    await roundTrips(8, 1, floorCall);

    for (const inFlight of [1, 64]) {
      // One-second turns in rotation, so a change in the machine's load falls on all three alike.
      const totals = { raw: 0, protocol: 0, rpc: 0 };
      let next = 0;
      const rpcCall = (): Promise<unknown> =>
        firstValueFrom(client.call(PROVISION_RPCS.inventory, `node-${(next++ % 64) + 1}.example.net`, {}));
      for (let turn = 0; turn < RPC_SECONDS; turn++) {
        totals.raw += await roundTrips(inFlight, 1, () => provisioner.nc.request('bench.echo', payload, { timeout: 5000 }));
        totals.protocol += await roundTrips(inFlight, 1, floorCall);
        totals.rpc += await roundTrips(inFlight, 1, rpcCall);
      }
      const [raw, protocol, rpc] = [totals.raw, totals.protocol, totals.rpc].map((sum) => Math.round(sum / RPC_SECONDS));
      print({
        figure: 'rpc round trips/s',
        in_flight: inFlight,
        rpc: 'rpcutil#inventory via codec + ChoriaRpcClient + simulated node',
        round_trips_per_s: rpc,
        baseline: `raw nats.js request/reply (${requestBytes} B request, ${replyBytes} B reply)`,
        baseline_round_trips_per_s: raw,
        ratio: +(rpc / Math.max(raw, 1)).toFixed(2),
        protocol_floor: "the v1 layers' bare JSON, base64 and SHA-256 on both sides over raw request/reply (bench/wireFloor.ts)",
        protocol_floor_round_trips_per_s: protocol,
        floor_ratio_to_raw: +(protocol / Math.max(raw, 1)).toFixed(2),
        ratio_to_floor: +(rpc / Math.max(protocol, 1)).toFixed(2),
      });
    }
    await fleet.stop();

    for (const nodes of DISCOVERY_SIZES) {
      const simulated = await simulateProcess(server.url, nodes);
      try {
        for (let round = 1; round <= DISCOVERY_ROUNDS; round++) {
          const start = now();
          const found = await firstValueFrom(broadcastDiscovery(client));
          print({
            figure: 'broadcast discovery',
            nodes,
            round,
            found: found.length,
            ms: Math.round(now() - start),
            bad_replies: client.badMessages.count('reply'),
            goal: 'every node found within the 2 s window',
            goal_met: found.length === nodes,
          });
        }
      } finally {
        await simulated.stop();
      }
    }

    client.close();
    await provisioner.drain();
    await fleetSide.drain();
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
