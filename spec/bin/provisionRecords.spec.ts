import { SCRIPTED_HELPER, sampleValue } from '../helpers/provisioner';
import { ElectionFleet, ProvisionerProcess, tracedRequests } from '../helpers/electionFleet';
import { RECORDS_STREAM } from '../helpers/choriaBroker';
import { RxfleetProcess } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';
import type { CycleRecord } from '../../lib/provision/records/cycleRecord';

// The provisioning records (DECISIONS P21) and `rxfleet status` / `history` reading them, on a
// broker laid out as Choria's: the records stream in the `choria` account, made by the site, the
// provisioning account allowed to publish to its subjects and nothing else; status and history
// run as the broker's administrator. Real `rxfleet provision` processes, a fleet from `rxfleet
// simulate --trace`, and a helper that defers the `defer-*` nodes and fails the `fail-*` ones.

jest.setTimeout(180_000);

const BY_IDENTITY = `${SCRIPTED_HELPER} by-identity`;
const summaryOf = (fleet: RxfleetProcess): Record<string, unknown> | undefined => fleet.lines.find((l) => l.type === 'summary');
const sum = async (provisioners: ProvisionerProcess[], name: string, labels: Record<string, string> = {}): Promise<number> => {
  const values = await Promise.all(provisioners.map(async (p) => sampleValue(await p.metrics(), name, { site: p.name, ...labels })));
  return values.reduce((a, b) => a + b, 0);
};
const setUp = (provisioners: ProvisionerProcess[]): Promise<void[]> =>
  Promise.all(
    provisioners.map((p) =>
      waitFor(
        async () => sampleValue(await p.metrics().catch(() => ''), 'choria_provisioner_discover_cycles', { site: p.name }) >= 1,
        `${p.name} to set up`,
        30_000,
      ),
    ),
  );

/** Runs a read command to its end and returns its JSON lines; it must exit 0. */
async function read(fleet: ElectionFleet, args: string[]): Promise<Record<string, unknown>[]> {
  const run = fleet.asAdministrator(args);
  const exit = await run.exited;
  if (exit.code !== 0) throw new Error(`rxfleet ${args.join(' ')} exited ${exit.code}: ${run.stderr()}`);
  return run.lines;
}

/** The text a read command prints; it must exit 0. */
async function text(fleet: ElectionFleet, args: string[]): Promise<string> {
  const run = fleet.asAdministrator(args);
  const exit = await run.exited;
  if (exit.code !== 0) throw new Error(`rxfleet ${args.join(' ')} exited ${exit.code}: ${run.stderr()}`);
  return run.stdout();
}

/** Every log line of `p` whose message starts with `prefix`, as messages. */
const logged = (p: ProvisionerProcess, prefix: string): string[] =>
  p.process.lines.map((l) => String(l.msg)).filter((m) => m.startsWith(prefix));

describe('provisioning records and rxfleet status / history, on a broker laid out as Choria’s', () => {
  let site: ElectionFleet | undefined;
  afterEach(async () => {
    await site?.stop();
    site = undefined;
  });

  it('three active-active instances, some nodes failing: status and history agree with the fleet’s count and with each instance’s log', async () => {
    site = await ElectionFleet.start(5000, { claimsTtlMs: 5000, records: {} });
    const provisioners = await Promise.all(
      ['rec-a', 'rec-b', 'rec-c'].map((name) => site!.provisioner(name, { mode: 'active-active', helper: BY_IDENTITY, records: true })),
    );
    await setUp(provisioners);
    const good = site.simulate(['--nodes', '30', '--latency', '20ms', '--restart-delay', '100ms', '--exit-when-provisioned']);
    site.simulate(['--nodes', '4', '--name-prefix', 'defer']);
    site.simulate(['--nodes', '2', '--name-prefix', 'fail']);
    const failingNodes = [1, 2, 3, 4].map((n) => `defer-${n}.example.net`).concat(['fail-1.example.net', 'fail-2.example.net']);

    expect((await good.exited).code).toBe(0);
    expect(summaryOf(good)).toMatchObject({ nodes: 30, provisioned: 30, duplicates: 0 });
    // Each failing node's cycle has ended on some instance (its startup event reached one).
    await waitFor(
      async () => failingNodes.every((node) => provisioners.some((p) => logged(p, `Could not provision ${node}:`).length > 0)),
      'every failing node to have failed once',
      30_000,
    );
    // And its record is in the stream (written as the cycle ends, acknowledged a moment later).
    let fleet: Record<string, unknown> = {};
    let instances: Record<string, unknown>[] = [];
    await waitFor(
      async () => {
        const lines = await read(site!, ['status', '--json']);
        fleet = lines.find((l) => l.type === 'fleet') ?? {};
        instances = lines.filter((l) => l.type === 'instance');
        return (fleet.failing as { count: number } | undefined)?.count === 6;
      },
      'status to see the six failing nodes',
      20_000,
    );

    // The fleet's own count, the instances' counters and status say the same.
    expect(fleet.lastOutcomes).toEqual({ provisioned: 30, failed: 6 });
    expect(await sum(provisioners, 'choria_provisioner_provisioned')).toBe(30);
    expect(instances.map((i) => [i.instance, i.role])).toEqual(provisioners.map((p) => [p.identity, 'active']));
    expect((fleet.failing as { oldest?: { node: string } }).oldest?.node).toMatch(/^(defer|fail)-\d\.example\.net$/);
    expect(fleet.claims).toMatchObject({ ttlMs: 5000 });
    expect(await sum(provisioners, 'choria_provisioner_records_total', { result: 'failed' })).toBe(0);
    expect(await sum(provisioners, 'choria_provisioner_records_total', { result: 'written' })).toBeGreaterThanOrEqual(36);
    // Each failing node waits out its backoff on the instance that ran it (one failure so far).
    expect(await sum(provisioners, 'choria_provisioner_backoff_nodes')).toBeGreaterThanOrEqual(6);

    // Every failing node: history has one record per "Could not provision" line of the instances'
    // logs, each on the instance that logged it, with its message.
    for (const node of failingNodes) {
      const records = (await read(site, ['history', node, '--json'])) as unknown as CycleRecord[];
      const lines = provisioners.flatMap((p) => logged(p, `Could not provision ${node}:`).map((m) => ({ instance: p.identity, m })));
      expect(records).toHaveLength(lines.length);
      for (const record of records) {
        expect(record).toMatchObject({ node, outcome: 'failed', backoff: { failures: 1 } });
        expect(lines).toContainEqual({ instance: record.instance, m: `Could not provision ${node}: ${record.error?.message}` });
        expect(typeof record.claim?.revision).toBe('number');
      }
      const decided = records[0].steps.map((s) => [s.step, s.outcome]);
      if (node.startsWith('defer'))
        expect([decided, records[0].error?.step, records[0].decision?.kind]).toEqual([
          [
            ['inventory', 'ok'],
            ['helper', 'ok'],
          ],
          'defer',
          'defer',
        ]);
      else
        expect([decided, records[0].error?.step]).toEqual([
          [
            ['inventory', 'ok'],
            ['helper', 'failed'],
          ],
          'helper',
        ]);
    }

    // Every provisioned node: its record names the instance that configured it (the fleet's trace
    // says who sent configure) and that logged "Provisioned", step by step, with the claim's revision.
    const configures = tracedRequests(good).filter((r) => r.action === 'configure');
    expect(configures).toHaveLength(30);
    for (const configure of configures.slice(0, 10)) {
      const [newest] = (await read(site, ['history', configure.identity, '--json'])) as unknown as CycleRecord[];
      const by = provisioners.find((p) => p.callerId === configure.caller)!;
      expect(newest).toMatchObject({ node: configure.identity, instance: by.identity, outcome: 'provisioned', sighting: { via: 'event' } });
      expect(newest.steps.map((s) => s.step)).toEqual(['inventory', 'helper', 'configure', 'restart']);
      expect(newest.decision?.keys).toContain('plugin.choria.server.provision');
      expect(newest.claim?.revision).toBeGreaterThan(0);
      expect(logged(by, `Provisioned ${configure.identity}`)).toHaveLength(1);
    }

    // The same, for people: the instances, the counts, a failing node's story.
    const table = await text(site, ['status']);
    for (const p of provisioners) expect(table).toMatch(new RegExp(`^${p.identity.replace(/\./g, '\\.')}\\s+active\\s`, 'm'));
    expect(table).toMatch(/^failing\s+6\s+(defer|fail)-\d\.example\.net for /m);
    expect(table).toContain('last cycle of each node recorded: 6 failed, 30 provisioned');
    const story = await text(site, ['history', 'defer-1.example.net']);
    expect(story).toMatch(/^defer-1\.example\.net: failing since .* \(1 failure in a row\), next try after /);
    expect(story).toContain('failed at defer: configuration defered: not yet');
    expect(story).toMatch(/^ {4}helper +ok /m);
    expect(await text(site, ['status', 'fail-1.example.net'])).toContain('failed at helper: ');
  });

  it('a records stream that is full (discard new): every record past it refused and counted, no node lost', async () => {
    site = await ElectionFleet.start(5000, { records: { maxMsgs: 3, discard: 'new' } });
    const [instance] = [await site.provisioner('rec-full', { mode: 'single', records: true })];
    const fleet = site.simulate(['--nodes', '20', '--latency', '20ms', '--restart-delay', '100ms', '--exit-when-provisioned']);
    expect((await fleet.exited).code).toBe(0);
    expect(summaryOf(fleet)).toMatchObject({ nodes: 20, provisioned: 20, duplicates: 0 });
    const metrics = await instance.metrics();
    expect(sampleValue(metrics, 'choria_provisioner_provisioned', { site: instance.name })).toBe(20);
    await waitFor(
      async () =>
        sampleValue(await instance.metrics(), 'choria_provisioner_records_total', { site: instance.name, result: 'failed' }) >= 17,
      'the refused records to be counted',
      10_000,
    );
    expect(
      sampleValue(await instance.metrics(), 'choria_provisioner_records_total', { site: instance.name, result: 'written' }),
    ).toBeLessThanOrEqual(3);
    expect(
      instance.process.lines.some((l) => String(l.msg).startsWith(`a provisioning record could not be written to ${RECORDS_STREAM}`)),
    ).toBe(true);
  });

  it('a records stream with no leader (its only replica’s server killed): no node lost, each record counted as failed', async () => {
    site = await ElectionFleet.startCluster(5000, { replicas: 1, records: { replicas: 1 } });
    const cluster = site.cluster!;
    const leader = await cluster.streamLeader(RECORDS_STREAM, 'choria');
    expect(leader).toBeDefined();
    const lost = cluster.server(leader!);
    await lost.kill();
    const others = cluster.servers.filter((s) => s.name !== leader).map((s) => s.url);
    const instance = await site.provisioner('rec-noleader', { mode: 'single', records: true, servers: others });
    const fleet = site.simulate(['--nodes', '20', '--latency', '20ms', '--restart-delay', '100ms', '--exit-when-provisioned'], others[0]);
    expect((await fleet.exited).code).toBe(0);
    expect(summaryOf(fleet)).toMatchObject({ nodes: 20, provisioned: 20, duplicates: 0 });
    expect(sampleValue(await instance.metrics(), 'choria_provisioner_provisioned', { site: instance.name })).toBe(20);
    await waitFor(
      async () =>
        sampleValue(await instance.metrics(), 'choria_provisioner_records_total', { site: instance.name, result: 'failed' }) >= 20,
      'every record to be counted as failed',
      30_000,
    );
    expect(sampleValue(await instance.metrics(), 'choria_provisioner_records_total', { site: instance.name, result: 'written' })).toBe(0);
  });
});
