import { createServer } from 'node:net';
import { Registry } from 'prom-client';
import { CredentialWatch } from '../../../../streams/credentialWatch';
import { registerProcessMetrics } from '../../../../streams/processMetrics';
import { ElectionMetrics } from '../../../../lib/choria/electionMetrics';
import { PROVISIONER_RPCS, ProvisionerMetrics } from '../../../../lib/provision/metrics/metrics';
import { UPSTREAM_NAME_FINDINGS_WITH_ELECTION, promtool } from '../../../helpers/provisioner';

// The election's counter keeps upstream's name too.

/** `name{labels} value` lines of the exposition, comments dropped. */
const samples = (text: string): string[] => text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

describe('ProvisionerMetrics', () => {
  it('every series exists at zero before the first node (P2), with site on all and no quantiles', async () => {
    const registry = new Registry();
    new ProvisionerMetrics({ registry, site: 'TEST' });
    const lines = samples(await registry.metrics());
    const expected = [
      ...[
        'discovered',
        'event_discovered',
        'incus_discovered',
        'discover_cycles',
        'discovery_errors',
        'provision_errors',
        'busy_workers',
        'provisioned',
        'work_queue_entries',
        'waiting_nodes',
        'paused',
        'helper_errors',
        'helper_shutdown_requests',
        'lock_refusals_total',
        'backoff_nodes',
      ].map((n) => `choria_provisioner_${n}{site="TEST"} 0`),
      'choria_provisioner_helper_time_sum{site="TEST"} 0',
      'choria_provisioner_helper_time_count{site="TEST"} 0',
      ...PROVISIONER_RPCS.flatMap((rpc) => [
        `choria_provisioner_rpc_time_sum{site="TEST",rpc="${rpc}"} 0`,
        `choria_provisioner_rpc_time_count{site="TEST",rpc="${rpc}"} 0`,
        `choria_provisioner_rpc_errors{site="TEST",rpc="${rpc}"} 0`,
      ]),
      'choria_provisioner_admission_refused_total{site="TEST",reason="held"} 0',
      'choria_provisioner_admission_refused_total{site="TEST",reason="full"} 0',
      'choria_provisioner_admission_refused_total{site="TEST",reason="backoff"} 0',
      ...['written', 'failed', 'dropped'].map((result) => `choria_provisioner_records_total{site="TEST",result="${result}"} 0`),
      'choria_provisioner_malformed_input_total{site="TEST",source="lifecycle_event"} 0',
      'choria_provisioner_malformed_input_total{site="TEST",source="discovery_reply"} 0',
      'choria_provisioner_malformed_input_total{site="TEST",source="rpc_reply"} 0',
      'choria_provisioner_malformed_input_total{site="TEST",source="incus_event"} 0',
      'choria_provisioner_readmissions_total{site="TEST",via="discovery"} 0',
      'choria_provisioner_readmissions_total{site="TEST",via="event"} 0',
      'choria_provisioner_readmissions_total{site="TEST",via="incus"} 0',
      ...['sighted', 'already_up', 'not_up', 'unselected', 'unmapped'].map(
        (result) => `choria_provisioner_incus_events_total{site="TEST",result="${result}"} 0`,
      ),
      'choria_provisioner_unexpected_replies_total{site="TEST",reason="unsolicited"} 0',
      'choria_provisioner_unexpected_replies_total{site="TEST",reason="stranger"} 0',
    ];
    expect([...lines].sort()).toEqual([...expected].sort());
    expect(lines.some((l) => l.includes('quantile'))).toBe(false);
  });

  it('each event moves exactly its own series', async () => {
    const registry = new Registry();
    const m = new ProvisionerMetrics({ registry, site: 's' });
    const before = samples(await registry.metrics());
    m.discovered();
    m.eventDiscovered();
    m.eventDiscovered();
    m.discoverCycle();
    m.discoveryError();
    m.provisionError();
    m.provisioned();
    m.setBusyWorkers(3);
    m.setWorkQueueEntries(7);
    m.setWaitingNodes(9);
    m.setPaused(true);
    m.observeRpc('choria_provision#configure', 0.25);
    m.observeRpc('choria_provision#configure', 0.5);
    m.rpcError('rpcutil#inventory');
    m.observeHelper(1.5);
    m.helperError();
    m.helperShutdownRequest();
    m.admissionRefused('full');
    m.lockRefused();
    m.malformedInput('lifecycle_event');
    m.readmitted('discovery');
    m.incusDiscovered();
    m.incusEvent('unmapped');
    m.incusEvent('unmapped');
    const after = samples(await registry.metrics());
    const changed = after.filter((l) => !before.includes(l)).sort();
    expect(changed).toEqual(
      [
        'choria_provisioner_discovered{site="s"} 1',
        'choria_provisioner_event_discovered{site="s"} 2',
        'choria_provisioner_discover_cycles{site="s"} 1',
        'choria_provisioner_discovery_errors{site="s"} 1',
        'choria_provisioner_provision_errors{site="s"} 1',
        'choria_provisioner_provisioned{site="s"} 1',
        'choria_provisioner_busy_workers{site="s"} 3',
        'choria_provisioner_work_queue_entries{site="s"} 7',
        'choria_provisioner_waiting_nodes{site="s"} 9',
        'choria_provisioner_paused{site="s"} 1',
        'choria_provisioner_rpc_time_sum{site="s",rpc="choria_provision#configure"} 0.75',
        'choria_provisioner_rpc_time_count{site="s",rpc="choria_provision#configure"} 2',
        'choria_provisioner_rpc_errors{site="s",rpc="rpcutil#inventory"} 1',
        'choria_provisioner_helper_time_sum{site="s"} 1.5',
        'choria_provisioner_helper_time_count{site="s"} 1',
        'choria_provisioner_helper_errors{site="s"} 1',
        'choria_provisioner_helper_shutdown_requests{site="s"} 1',
        'choria_provisioner_admission_refused_total{site="s",reason="full"} 1',
        'choria_provisioner_lock_refusals_total{site="s"} 1',
        'choria_provisioner_malformed_input_total{site="s",source="lifecycle_event"} 1',
        'choria_provisioner_readmissions_total{site="s",via="discovery"} 1',
        'choria_provisioner_incus_discovered{site="s"} 1',
        'choria_provisioner_incus_events_total{site="s",result="unmapped"} 2',
      ].sort(),
    );
    m.setPaused(false);
    expect(samples(await registry.metrics())).toContain('choria_provisioner_paused{site="s"} 0');
  });

  it('an empty site is still a label, as upstream', async () => {
    const registry = new Registry();
    new ProvisionerMetrics({ registry });
    expect(samples(await registry.metrics())).toContain('choria_provisioner_discovered{site=""} 0');
  });

  it('two instances on one registry collide loudly, two registries do not', () => {
    const registry = new Registry();
    new ProvisionerMetrics({ registry });
    expect(() => new ProvisionerMetrics({ registry })).toThrow(/already been registered/);
    expect(() => new ProvisionerMetrics({ registry: new Registry() })).not.toThrow();
  });
});

describe('ElectionMetrics', () => {
  it('every series exists at zero, then follows campaigns, leadership, interval and set-up failures', async () => {
    const registry = new Registry();
    const m = new ElectionMetrics({ registry, election: 'provisioner', identity: 'p1.example.net' });
    const labels = 'election="provisioner",identity="p1.example.net"';
    expect(samples(await registry.metrics()).sort()).toEqual(
      [
        `choria_election_campaigns{${labels},state="candidate"} 0`,
        `choria_election_campaigns{${labels},state="leader"} 0`,
        `choria_election_leader{${labels}} 0`,
        `choria_election_interval_seconds{${labels}} 0`,
        `choria_election_setup_failures_total{${labels}} 0`,
      ].sort(),
    );
    m.campaign('candidate');
    m.campaign('leader');
    m.campaign('leader');
    m.setLeader(true);
    m.setIntervalSeconds(0.5);
    m.setupFailure();
    expect(samples(await registry.metrics()).sort()).toEqual(
      [
        `choria_election_campaigns{${labels},state="candidate"} 1`,
        `choria_election_campaigns{${labels},state="leader"} 2`,
        `choria_election_leader{${labels}} 1`,
        `choria_election_interval_seconds{${labels}} 0.5`,
        `choria_election_setup_failures_total{${labels}} 1`,
      ].sort(),
    );
  });
});

describe('the exposition under promtool check metrics', () => {
  it('parses, and the only lint findings are upstream counter names kept for dashboards', async () => {
    const registry = new Registry();
    const m = new ProvisionerMetrics({ registry, site: 'TEST' });
    const e = new ElectionMetrics({ registry, election: 'provisioner', identity: 'p1' });
    m.observeRpc('choria_provision#jwt', 0.1);
    m.admissionRefused('held');
    e.campaign('leader');
    const { code, output } = await promtool(await registry.metrics());
    // promtool: 0 clean, 1 unparsable, 3 lint findings only.
    expect([0, 3]).toContain(code);
    const findings = output.split('\n').filter((l) => l.trim() !== '');
    expect(findings.sort()).toEqual([...UPSTREAM_NAME_FINDINGS_WITH_ELECTION].sort());
  });

  it("with the process and Node.js series beside them (the daemon's registry), still only upstream's names", async () => {
    const registry = new Registry();
    new ProvisionerMetrics({ registry, site: 'TEST' });
    new ElectionMetrics({ registry, election: 'provisioner', identity: 'p1' });
    new CredentialWatch({ credentials: [], registry });
    registerProcessMetrics(registry);
    // `nodejs_active_handles{type}` has a sample per open libuv handle and none without one; a
    // daemon always holds its monitoring listener, so the spec holds one too (a bare jest worker
    // may hold none).
    const listener = createServer();
    await new Promise<void>((listening) => listener.listen(0, '127.0.0.1', listening));
    const text = await registry.metrics().finally(() => listener.close());
    for (const series of [
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_active_handles',
    ])
      expect(text).toMatch(new RegExp(`^${series}[ {]`, 'm'));
    const { code, output } = await promtool(text);
    expect([0, 3]).toContain(code);
    // prom-client's `_total` gauges are not registered: the only findings are upstream's counter names.
    expect(
      output
        .split('\n')
        .filter((l) => l.trim() !== '')
        .sort(),
    ).toEqual([...UPSTREAM_NAME_FINDINGS_WITH_ELECTION].sort());
  });

  it('would catch a broken exposition', async () => {
    const { code } = await promtool('choria_provisioner_discovered{site="x" 1\n');
    expect(code).toBe(1);
  });
});
