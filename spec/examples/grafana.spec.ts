import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { resolve } from 'node:path';
import { Registry } from 'prom-client';
import { startEnrichDaemon } from '../../bin/enrich/daemon';
import { loadEnrichSettings } from '../../bin/enrich/commandLine';
import { startProvisioner } from '../../bin/provision/daemon';
import { parseChoriaClientConfig } from '../../lib/choria/clientConfig';
import { parseProvisionerConfig, requireValidConfig } from '../../lib/provision/config';
import { MemoryElectionBucket } from '../../streams/memory/memoryElectionStore';
import { MemoryNatsServer, memoryFleetConnection } from '../../streams/memory/memoryNats';
import { UPSTREAM_COUNTERS } from '../helpers/provisioner';

// Every series a panel of examples/grafana/ queries is one the daemon exports: each daemon runs in
// this process, its /metrics is scraped, and every metric name (and every label a query groups or
// filters by) of every target and template variable is looked up in what it serves.

const dashboards = resolve(__dirname, '../../examples/grafana');

interface Dashboard {
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
  templating: { list: Array<{ name: string; query: { query: string } }> };
}

const read = (name: string): Dashboard => JSON.parse(readFileSync(resolve(dashboards, name), 'utf8')) as Dashboard;

/** Every PromQL expression of a dashboard: its panels' targets and its template variables. */
function queries(dashboard: Dashboard): string[] {
  return [...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...dashboard.templating.list.map((v) => v.query.query)];
}

const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/** What an expression reads: metric names, and the labels it matches on or groups by. */
function readsOf(expr: string): { metrics: string[]; labels: string[] } {
  const labelValues = /^label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*(\w+)\s*\)$/.exec(expr.trim());
  if (labelValues !== null) return { metrics: [labelValues[1]], labels: [labelValues[2]] };
  const labels: string[] = [];
  let text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  text = text.replace(/\{([^}]*)\}/g, (_, matchers: string) => {
    for (const m of matchers.matchAll(/(\w+)\s*(=~|!~|!=|=)/g)) labels.push(m[1]);
    return ' ';
  });
  text = text.replace(/\b(by|without)\s*\(([^)]*)\)/g, (_, _word: string, grouped: string) => {
    labels.push(
      ...grouped
        .split(',')
        .map((l) => l.trim())
        .filter((l) => l !== ''),
    );
    return ' ';
  });
  text = text.replace(/\[[^\]]*\]/g, ' ');
  const metrics = [...text.matchAll(/\b([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)]
    .map((m) => m[1])
    .filter((w) => !PROMQL_WORDS.has(w.toLowerCase()) && !/^\d/.test(w));
  return { metrics, labels };
}

/** The series names /metrics serves (a summary's and a histogram's parts too) and each one's labels. */
async function exported(port: number, registry: Registry): Promise<Map<string, Set<string>>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const series = new Map<string, Set<string>>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const labels = new Set((registry.getSingleMetric(name) as unknown as { labelNames: string[] }).labelNames);
    const parts = type === 'histogram' ? ['_bucket', '_sum', '_count'] : type === 'summary' ? ['', '_sum', '_count'] : [''];
    for (const part of parts) series.set(`${name}${part}`, part === '_bucket' ? new Set([...labels, 'le']) : labels);
  }
  return series;
}

/** Every metric and label of every query of `dashboard` that `series` lacks, as readable lines. */
function missing(dashboard: Dashboard, series: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const expr of queries(dashboard)) {
    const { metrics, labels } = readsOf(expr);
    if (metrics.length === 0) problems.push(`${expr}: reads no metric`);
    for (const metric of metrics) if (!series.has(metric)) problems.push(`${expr}: ${metric} is not exported`);
    const known = new Set(metrics.flatMap((m) => [...(series.get(m) ?? [])]));
    for (const label of labels) if (!known.has(label)) problems.push(`${expr}: no series of it has the label ${label}`);
  }
  return problems;
}

describe('readsOf (the PromQL this spec understands)', () => {
  it('finds metric names and labels, not functions, keywords, strings or ranges', () => {
    expect(
      readsOf(
        'sum by (rpc) (rate(choria_provisioner_rpc_time_sum{site=~"$site"}[5m])) / sum by (rpc) (rate(choria_provisioner_rpc_time_count{site=~"$site"}[5m]))',
      ),
    ).toEqual({
      metrics: ['choria_provisioner_rpc_time_sum', 'choria_provisioner_rpc_time_count'],
      labels: ['site', 'site', 'rpc', 'rpc'],
    });
    expect(readsOf('histogram_quantile(0.95, sum by (le, kind) (rate(enricher_read_duration_seconds_bucket[5m])))')).toEqual({
      metrics: ['enricher_read_duration_seconds_bucket'],
      labels: ['le', 'kind'],
    });
    expect(readsOf('label_values(choria_election_leader, identity)')).toEqual({
      metrics: ['choria_election_leader'],
      labels: ['identity'],
    });
  });
});

describe('examples/grafana/rxfleet-provisioner.json', () => {
  it('queries only series rxfleet provision exports, and keeps every upstream series of dashboard 12431 on a panel', async () => {
    const server = new MemoryNatsServer();
    const bucket = new MemoryElectionBucket({ ttlMs: 10_000 });
    const registry = new Registry();
    const daemon = await startProvisioner({
      config: requireValidConfig(parseProvisionerConfig('helper: /bin/true\nchoria_insecure: true\nleader_election: true\nsite: dash\n')),
      choria: parseChoriaClientConfig('identity = dash.example.net\n').config,
      connection: memoryFleetConnection(server.connect({ name: 'dash', inboxPrefix: 'provisioning.reply' })),
      electionStore: bucket.store(),
      registry,
      tuning: { monitorPort: 0, electionStartSplayMs: 0 },
    });
    try {
      const series = await exported(daemon.port as number, registry);
      const dashboard = read('rxfleet-provisioner.json');
      expect(missing(dashboard, series)).toEqual([]);
      const queried = new Set(queries(dashboard).flatMap((q) => readsOf(q).metrics));
      for (const name of [
        ...UPSTREAM_COUNTERS,
        'choria_provisioner_busy_workers',
        'choria_provisioner_work_queue_entries',
        'choria_provisioner_waiting_nodes',
        'choria_provisioner_paused',
      ])
        expect(queried).toContain(name);
      // rxfleet's own: the election, refusals, malformed input, the Incus feed's sightings.
      for (const name of [
        'choria_election_leader',
        'choria_election_campaigns',
        'choria_provisioner_admission_refused_total',
        'choria_provisioner_lock_refusals_total',
        'choria_provisioner_malformed_input_total',
        'choria_provisioner_incus_discovered',
      ])
        expect(queried).toContain(name);
    } finally {
      await daemon.stop({ graceMs: 0 });
    }
  });
});

describe('examples/grafana/rxfleet-enricher.json', () => {
  it('queries only series rxfleet enrich exports: events by action and status, reads, rounds, held and dropped', async () => {
    // The real Incus client against a socket that is not there: its series exist, it keeps trying.
    const { settings } = loadEnrichSettings({
      incus: resolve(dashboards, 'no-incus.socket'),
      stdout: true,
      monitor: { host: '127.0.0.1', port: 0 },
    });
    const registry = new Registry();
    const daemon = await startEnrichDaemon(settings, { registry, stdout: new PassThrough() });
    try {
      const series = await exported(daemon.port as number, registry);
      const dashboard = read('rxfleet-enricher.json');
      expect(missing(dashboard, series)).toEqual([]);
      const queried = new Set(queries(dashboard).flatMap((q) => readsOf(q).metrics));
      for (const name of [
        'enricher_events_published_total',
        'enricher_reads_total',
        'enricher_sweeps_total',
        'enricher_nats_held',
        'enricher_events_dropped_total',
      ])
        expect(queried).toContain(name);
    } finally {
      await daemon.stop();
    }
  });
});

describe('every dashboard', () => {
  it.each(['rxfleet-provisioner.json', 'rxfleet-enricher.json'])(
    '%s: imports into Grafana with a Prometheus data source, each panel with a query',
    (name) => {
      const dashboard = read(name) as Dashboard & {
        __inputs: Array<{ name: string; pluginId: string }>;
        uid: string;
        title: string;
        schemaVersion: number;
      };
      expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', pluginId: 'prometheus' })]);
      expect(dashboard.uid).toMatch(/^rxfleet-/);
      expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
      for (const panel of dashboard.panels.filter((p) => p.type !== 'row'))
        expect(`${panel.title}: ${(panel.targets ?? []).length > 0}`).toBe(`${panel.title}: true`);
    },
  );
});
