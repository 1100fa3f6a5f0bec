import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { dirname, join, resolve } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { Registry } from 'prom-client';
import { startEnrichDaemon } from '../../bin/enrich/daemon';
import { loadEnrichSettings } from '../../bin/enrich/commandLine';
import { ProvisionerDaemon, startProvisioner } from '../../bin/provision/daemon';
import { parseChoriaClientConfig } from '../../lib/choria/clientConfig';
import { parseProvisionerConfig, requireValidConfig } from '../../lib/provision/config/config';
import { createClaimsBucket } from '../../streams/claims/claimsBucket';
import { createElectionBucket } from '../../streams/election/electionBucket';
import { SAMPLE_HELPERS, UPSTREAM_COUNTERS } from '../helpers/provisioner';
import { useNatsServer } from '../helpers/nats';
import { waitFor } from '../helpers/waitFor';

// Every series a panel of examples/grafana/ queries is one the daemon exports: each daemon runs in
// this process, its /metrics is scraped, and every metric name (and every label a query groups or
// filters by) of every target and template variable is looked up in what it serves.

const dashboards = resolve(__dirname, '../../examples/grafana');
const docs = resolve(__dirname, '../../docs');

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

/**
 * The series a metrics page documents: every backticked name in the first cell of a table row
 * (labels in braces dropped), and those its "Series without a panel" section names, with why.
 */
function documented(page: string): { series: string[]; noPanel: Map<string, string> } {
  const text = readFileSync(resolve(docs, page), 'utf8');
  const series = new Set<string>();
  for (const line of text.split('\n')) {
    // The first cell, `\|` inside it (a label's alternatives) not ending it.
    const cell = /^\|((?:[^|\\]|\\.)*)\|/.exec(line)?.[1];
    if (cell === undefined) continue;
    for (const [, name] of cell.matchAll(/`([a-z][a-z0-9_]*)(?:\{[^`]*\})?`/g)) if (name.includes('_')) series.add(name);
  }
  const noPanel = new Map<string, string>();
  const section = /### Series without a panel\n([\s\S]*?)(?:\n#|$)/.exec(text)?.[1] ?? '';
  for (const [, name, why] of section.matchAll(/^- `([a-z][a-z0-9_]*)`: (.+)$/gm)) noPanel.set(name, why);
  return { series: [...series], noPanel };
}

/** Whether a dashboard queries a series (a summary or histogram through its `_sum`, `_count` or `_bucket`). */
const queriedBy = (queried: Set<string>, name: string): boolean =>
  ['', '_sum', '_count', '_bucket'].some((part) => queried.has(`${name}${part}`));

/**
 * What a metrics page and its dashboard must agree on: every documented series is exported by
 * the daemon, and on a panel or named without one (with a reason); every series named without a
 * panel is documented and really not on one.
 */
function disagreements(page: string, dashboard: Dashboard, series: Map<string, Set<string>>): string[] {
  const { series: names, noPanel } = documented(page);
  const queried = new Set(queries(dashboard).flatMap((q) => readsOf(q).metrics));
  const problems: string[] = [];
  for (const name of names) {
    if (!queriedBy(new Set(series.keys()), name)) problems.push(`${page} documents ${name}, which the daemon does not export`);
    const onPanel = queriedBy(queried, name);
    if (!onPanel && !noPanel.has(name)) problems.push(`${page} documents ${name}: no panel queries it and the page does not say why`);
    if (onPanel && noPanel.has(name)) problems.push(`${page} says ${name} has no panel, but one queries it`);
  }
  for (const name of noPanel.keys())
    if (!names.includes(name)) problems.push(`${page} names ${name} without a panel but documents no such series`);
  return problems;
}

describe('documented (the metrics pages this spec reads)', () => {
  it('finds every series of both pages’ tables, labels dropped', () => {
    const provisioner = documented('provisioner/metrics.md').series;
    for (const name of [
      'choria_provisioner_rpc_time',
      'choria_provisioner_backoff_nodes',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ])
      expect(provisioner).toContain(name);
    const enricher = documented('enricher/metrics.md').series;
    for (const name of ['enricher_published_total', 'enricher_projects', 'enricher_networks', 'incus_api_request_seconds'])
      expect(enricher).toContain(name);
  });
});

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
  const server = useNatsServer();

  /** A provisioner connecting itself to the private server (so its credentials are watched), with these lines of YAML. */
  const daemon = (name: string, yaml: string[], registry: Registry, helper = '/bin/true', top: string[] = []): Promise<ProvisionerDaemon> =>
    startProvisioner({
      config: requireValidConfig(
        parseProvisionerConfig(
          [
            `helper: ${helper}`,
            'choria_insecure: true',
            'site: dash',
            ...top,
            `rxfleet: {nats_servers: [${server().url}], ${yaml.join(', ')}}`,
            '',
          ].join('\n'),
        ),
      ),
      choria: parseChoriaClientConfig(`identity = ${name}.example.net\n`).config,
      registry,
      tuning: { monitorPort: 0, electionStartSplayMs: 0 },
    });

  it('every series metrics.md documents is exported and on a panel; every series and label it queries is exported; upstream’s dashboard 12431 series kept', async () => {
    const admin = await connect({ servers: server().url });
    await createElectionBucket(admin, { ttlMs: 10_000 });
    await createClaimsBucket(admin, { ttlMs: 10_000 });
    await admin.close();
    // Between them, every series: the election, the persistent helper and the records on one; active-active's claims on the other.
    const elected = new Registry();
    const shared = new Registry();
    const daemons = [
      await daemon(
        'dash-elected',
        [
          'election_api_prefix: $JS.API',
          'helper_mode: persistent',
          'helper_processes: 1',
          'records: true',
          'records_create: true',
          'records_api_prefix: $JS.API',
        ],
        elected,
        join(SAMPLE_HELPERS, 'persistent-helper.mjs'),
        // The election's series exist only with it, as go-choria's.
        ['leader_election: true'],
      ),
      await daemon('dash-active', ['mode: active-active', 'claims_api_prefix: $JS.API'], shared),
    ];
    try {
      const series = new Map<string, Set<string>>();
      for (const [d, registry] of [
        [daemons[0], elected],
        [daemons[1], shared],
      ] as const)
        for (const [name, labels] of await exported(d.port as number, registry))
          series.set(name, new Set([...(series.get(name) ?? []), ...labels]));
      const dashboard = read('rxfleet-provisioner.json');
      expect(missing(dashboard, series)).toEqual([]);
      expect(disagreements('provisioner/metrics.md', dashboard, series)).toEqual([]);
      const queried = new Set(queries(dashboard).flatMap((q) => readsOf(q).metrics));
      for (const name of [
        ...UPSTREAM_COUNTERS,
        'choria_provisioner_busy_workers',
        'choria_provisioner_work_queue_entries',
        'choria_provisioner_waiting_nodes',
        'choria_provisioner_paused',
      ])
        expect(queried).toContain(name);
    } finally {
      for (const d of daemons) await d.stop({ graceMs: 0 });
    }
  });
});

describe('examples/grafana/rxfleet-enricher.json', () => {
  const server = useNatsServer();
  it('queries only series rxfleet enrich exports: events by action and status, reads, rounds, held and dropped', async () => {
    // The real Incus client against a socket that is not there: its series exist, it keeps trying.
    const { settings } = loadEnrichSettings({
      incus: resolve(dashboards, 'no-incus.socket'),
      stdout: true,
      monitor: { host: '127.0.0.1', port: 0 },
    });
    const registry = new Registry();
    const daemon = await startEnrichDaemon(settings, { registry, stdout: new PassThrough() });
    // A second with the durable outputs and a standby (durable.md), whose series exist only with them.
    const durableFile = join(mkdtempSync(join(tmpdir(), 'rxfleet-dashboard-')), 'durable.yaml');
    writeFileSync(
      durableFile,
      [
        'outputs:',
        `  jetstream: {url: "${server().url}", create: true, replicas: 1, max_age: 1h, max_bytes: 64MiB, duplicate_window: 1m}`,
        '  state: {create: true}',
        'standby: {identity: dash-enricher, create: true, ttl: 2s}',
      ].join('\n'),
    );
    const durable = loadEnrichSettings({
      config: durableFile,
      incus: resolve(dashboards, 'no-incus.socket'),
      monitor: { host: '127.0.0.1', port: 0 },
    }).settings;
    const durableRegistry = new Registry();
    const second = await startEnrichDaemon(durable, { registry: durableRegistry, stdout: new PassThrough() });
    try {
      // The standby's election series come once it has connected and started campaigning.
      await waitFor(
        async () => (await exported(second.port as number, durableRegistry)).has('choria_election_leader'),
        'the election series',
      );
      const series = await exported(daemon.port as number, registry);
      for (const [name, labels] of await exported(second.port as number, durableRegistry))
        series.set(name, new Set([...(series.get(name) ?? []), ...labels]));
      const dashboard = read('rxfleet-enricher.json');
      expect(missing(dashboard, series)).toEqual([]);
      expect(disagreements('enricher/metrics.md', dashboard, series)).toEqual([]);
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
      await second.stop();
      rmSync(dirname(durableFile), { recursive: true, force: true });
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
