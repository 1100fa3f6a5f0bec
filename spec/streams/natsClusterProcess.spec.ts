import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { NatsConnection, connect } from '@nats-io/transport-node';
import { NatsClusterProcess, startNatsCluster } from '../../streams/natsClusterProcess';
import { cutOff } from '../helpers/natsPartition';
import { createClaimsBucket } from '../../streams/claims/claimsBucket';
import { markedProcesses, processMarker } from '../helpers/leftovers';
import { waitFor } from '../helpers/waitFor';

// The three-server cluster the cluster specs, benches and demo run on, and the network cut the
// partition specs make: real nats-server processes, real routes, real iptables rules.

jest.setTimeout(120_000);

const cutChains = (): string[] =>
  spawnSync('iptables', ['-w', '-S'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.startsWith(`-N RXF-CUT-${process.pid}-`));

describe('a private nats-server cluster', () => {
  let cluster: NatsClusterProcess | undefined;
  const connections: NatsConnection[] = [];
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((c) => c.close().catch(() => undefined)));
    await cluster?.stop();
    cluster = undefined;
  });

  it('forms: three named servers routed to each other, one JetStream meta leader, a replicated bucket written through one server and read through another; losing the meta leader elects another', async () => {
    cluster = await startNatsCluster();
    expect(cluster.servers.map((s) => s.name)).toEqual(['rxfleet-1', 'rxfleet-2', 'rxfleet-3']);
    expect(new Set(cluster.servers.map((s) => s.dir)).size).toBe(3);
    const leader = await cluster.metaLeader();
    expect(cluster.servers.map((s) => s.name)).toContain(leader);

    const first = await connect({ servers: cluster.servers[0].url });
    const third = await connect({ servers: cluster.servers[2].url });
    connections.push(first, third);
    await createClaimsBucket(first, { ttlMs: 60_000, replicas: 3 });
    const written = await (await new Kvm(first).open('RXFLEET_PROVISIONER_CLAIMS')).create('node-1', 'a');
    expect((await (await new Kvm(third).open('RXFLEET_PROVISIONER_CLAIMS')).get('node-1'))?.revision).toBe(written);

    const dead = cluster.server(leader!);
    await dead.kill();
    await cluster.ready();
    const next = await cluster.metaLeader();
    expect(next).toBeDefined();
    expect(next).not.toBe(leader);
    await dead.restart();
    await cluster.ready();
    const dirs = cluster.servers.map((s) => s.dir);
    await cluster.stop();
    cluster = undefined;
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
  });

  it('cuts one server off: a write through it is refused while the other two write on; healed, the routes come back and the rules are gone', async () => {
    cluster = await startNatsCluster({ partitionable: true });
    const admin = await connect({ servers: cluster.urls });
    connections.push(admin);
    await createClaimsBucket(admin, { ttlMs: 60_000, replicas: 3 });
    const [cut, other] = cluster.servers;
    const minority = await connect({ servers: cut.url });
    const majority = await connect({ servers: other.url });
    connections.push(minority, majority);
    const kvMinority = await new Kvm(minority).open('RXFLEET_PROVISIONER_CLAIMS', { timeout: 1000 });
    const kvMajority = await new Kvm(majority).open('RXFLEET_PROVISIONER_CLAIMS', { timeout: 1000 });

    const partition = cutOff(cluster, cut);
    try {
      expect(cutChains()).toHaveLength(1);
      // The majority elects what leaders it lost and writes on; through the cut server nothing is written.
      await waitFor(
        () =>
          kvMajority.create('after-cut', 'majority').then(
            () => true,
            () => false,
          ),
        'the majority to write',
        30_000,
      );
      await expect(kvMinority.create('minority', 'cut-off')).rejects.toThrow();
      expect(await kvMajority.get('minority')).toBeNull();
    } finally {
      partition.heal();
    }
    expect(cutChains()).toEqual([]);
    await cluster.ready();
    await waitFor(
      () =>
        kvMinority.create('healed', 'back').then(
          () => true,
          () => false,
        ),
      'a write through the healed server',
      30_000,
    );
  });

  describe.each(['SIGTERM', 'crash'] as const)('ended by %s', (ending) => {
    it('leaves no server, directory or firewall rule behind', async () => {
      const tmp = mkdtempSync(join(tmpdir(), 'rxfleet-cluster-leftovers-'));
      const marker = processMarker();
      const parent = spawn(process.execPath, ['--import', 'tsx', resolve(__dirname, '../fixtures/clusterParent.ts')], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, TMPDIR: tmp, ...marker.env },
      });
      try {
        let out = '';
        parent.stdout?.on('data', (d: Buffer) => (out += d.toString()));
        await waitFor(() => out.includes('\n'), 'the cluster to start and be cut', 60_000);
        expect(markedProcesses(marker).filter((p) => p.includes('nats-server'))).toHaveLength(3);
        expect(readdirSync(tmp).filter((d) => d.startsWith('rxfleet-nats-'))).toHaveLength(3);
        const chains = (): string[] =>
          spawnSync('iptables', ['-w', '-S'], { encoding: 'utf8' })
            .stdout.split('\n')
            .filter((l) => l.startsWith(`-N RXF-CUT-${parent.pid}-`));
        expect(chains()).toHaveLength(1);
        const exited = new Promise((r) => parent.once('exit', r));
        parent.kill(ending === 'crash' ? 'SIGUSR2' : 'SIGTERM');
        await exited;
        await waitFor(() => markedProcesses(marker).length === 0, 'every server to be gone', 10_000).catch(() => undefined);
        expect(markedProcesses(marker)).toEqual([]);
        expect(readdirSync(tmp).filter((d) => d.startsWith('rxfleet-nats-'))).toEqual([]);
        expect(chains()).toEqual([]);
      } finally {
        parent.kill('SIGKILL');
        for (const left of markedProcesses(marker)) process.kill(Number(left.split(' ')[0]), 'SIGKILL');
        rmSync(tmp, { recursive: true, force: true });
      }
    });
  });
});
