import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import {
  ENRICHER_CONFIG_SCHEMA,
  EnricherConfigError,
  parseEnricherConfig,
  parseListenAddress,
  splitNatsUrls,
} from '../../../lib/enricher/config/config';
import { parseProjectsServed, servedByConfig, servedByName } from '../../../lib/enricher/model/servedProjects';
import { Enrichment } from '../../../lib/enricher/model/wanted';

function problemsOf(raw: unknown): string[] {
  try {
    parseEnricherConfig(raw);
    return [];
  } catch (error) {
    if (error instanceof EnricherConfigError) return error.problems;
    throw error;
  }
}

describe('enricher configuration', () => {
  it('defaults to the upstream values: 16 workers, 10 s reads, 5 s read delay, 6 h rounds, 250 ms debounce, no store, no ttl', () => {
    const { settings, warnings } = parseEnricherConfig({});
    expect(settings).toMatchObject({
      projects: { mode: 'all' },
      workers: 16,
      readTimeout: 10_000,
      ipTimeout: 10_000,
      readDelay: 5_000,
      sweepInterval: 6 * 3_600_000,
      storeInterval: 5_000,
      debounceWindow: 250,
      ttl: 0,
      storeFile: undefined,
      outputs: { stdout: false },
    });
    expect(settings.wants.find((w) => w.action === 'network-updated')).toEqual({
      action: 'network-updated',
      enrich: Enrichment.network,
      debounce: true,
    });
    expect(warnings).toEqual([]);
  });

  it("reads a YAML file's values: durations with units, a projects list or marker, a data directory, outputs, wants", () => {
    const raw = parse(`
projects: [default, web]
workers: 4
read_timeout: 2s
read_delay: 1m30s
sweep_interval: 1h
debounce_window: 0
data_dir: /var/lib/rxfleet
ttl: 10m
outputs:
  stdout: true
  nats: { url: nats://127.0.0.1:4222, subject_prefix: fleet.incus }
wants:
  - { action: instance-started, enrich: [instance, interfaces] }
  - { action: instance-updated, enrich: [instance], debounce: true }
`);
    const { settings } = parseEnricherConfig(raw);
    expect(settings).toMatchObject({
      projects: { mode: 'list', names: ['default', 'web'] },
      workers: 4,
      readTimeout: 2_000,
      readDelay: 90_000,
      sweepInterval: 3_600_000,
      debounceWindow: 0,
      ttl: 600_000,
      storeFile: '/var/lib/rxfleet/enricher-cold-store.json',
      outputs: {
        stdout: true,
        nats: { servers: ['nats://127.0.0.1:4222'], subjectPrefix: 'fleet.incus', name: 'rxfleet-enrich', maxHeld: 10_000 },
      },
      wants: [
        { action: 'instance-started', enrich: Enrichment.instance | Enrichment.interfaces, debounce: false },
        { action: 'instance-updated', enrich: Enrichment.instance, debounce: true },
      ],
    });
    expect(parseEnricherConfig({ projects: 'user.label.dns.scope=global,local' }).settings.projects).toEqual({
      mode: 'marker',
      key: 'user.label.dns.scope',
      values: ['global', 'local'],
    });
  });

  it('warns about each unknown key and carries on', () => {
    expect(parseEnricherConfig({ workers: 2, sweep_project_delay: '30s', pprof: true }).warnings).toEqual([
      'sweep_project_delay: unknown key, ignored',
      'pprof: unknown key, ignored',
    ]);
    // A misspelling is named with the key it is likely to be, as the provisioner's are.
    expect(parseEnricherConfig({ workerz: 2, read_timout: '1s' }).warnings).toEqual([
      'workerz: unknown key, ignored (did you mean workers?)',
      'read_timout: unknown key, ignored (did you mean read_timeout?)',
    ]);
  });

  it('refuses wrong types and values, every problem with its path and what was expected', () => {
    expect(
      problemsOf({
        workers: 'many',
        read_timeout: 10,
        projects: 5,
        outputs: { nats: { subject_prefix: 'a..b' } },
        wants: [{ action: 'x', enrich: ['dns'] }],
      }),
    ).toEqual([
      'projects: expected a list of project names or a "key=value" marker',
      'workers: expected a whole number, got "many" (a string)',
      'read_timeout: expected a duration such as 250ms, 10s, 5m or 6h (or 0)',
      'wants.0.action: expected a string matching ^[a-z]+(-[a-z]+)+$, got "x" (a string)',
      'wants.0.enrich.0: expected one of "instance", "interfaces", "network", "project", got "dns" (a string)',
      'outputs.nats.subject_prefix: expected a string matching ^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$, got "a..b" (a string)',
    ]);
    expect(problemsOf({ workers: 0 })).toEqual(['workers: expected a number >= 1, got 0']);
    expect(problemsOf({ sweep_interval: '0' })).toEqual(['sweep_interval: must be at least 1 ms']);
    // A timer asked to wait longer than 2^31 - 1 ms fires at once: a 30-day sweep would be a tight loop.
    expect(problemsOf({ sweep_interval: '720h', read_delay: '600h' })).toEqual([
      'read_delay: must be at most 2147483647 ms (about 24.8 days, the longest a timer waits)',
      'sweep_interval: must be at most 2147483647 ms (about 24.8 days, the longest a timer waits)',
    ]);
    expect(problemsOf({ sweep_interval: '596h' })).toEqual([]);
    expect(problemsOf([])).toEqual(['(top level): expected a mapping of keys']);
    expect(problemsOf({ outputs: { stdout: true, kafka: {} } })).toEqual(['outputs.kafka: unknown key']);
  });

  it('the schema itself is valid draft 2020-12 and accepts its own defaults', () => {
    const ajv = new Ajv2020({ strict: true });
    addFormats(ajv);
    const validate = ajv.compile(ENRICHER_CONFIG_SCHEMA);
    expect(validate({ workers: 16, read_timeout: '10s', projects: 'user.x' })).toBe(true);
  });
});

describe('durations', () => {
  it('take Go units and sum parts; a bare number other than 0 is refused', () => {
    const ttls = ['250ms', '10s', '5m', '6h', '1h30m', '1.5s', '0', 0].map((v) => parseEnricherConfig({ ttl: v }).settings.ttl);
    expect(ttls).toEqual([250, 10_000, 300_000, 21_600_000, 5_400_000, 1_500, 0, 0]);
    for (const bad of ['10', 10, '10 s', '-1s'])
      expect(problemsOf({ read_timeout: bad })).toEqual(['read_timeout: expected a duration such as 250ms, 10s, 5m or 6h (or 0)']);
  });
});

describe('projects served', () => {
  it('all, a list, or a marker (a bare key means "is true")', () => {
    const all = parseProjectsServed(undefined);
    const list = parseProjectsServed(['a']);
    const bare = parseProjectsServed('user.enrich');
    const valued = parseProjectsServed('user.scope=global');
    expect([servedByName(all, 'x'), servedByName(list, 'a'), servedByName(list, 'b'), servedByName(bare, 'x')]).toEqual([
      true,
      true,
      false,
      undefined,
    ]);
    expect(servedByConfig(bare, 'x', { 'user.enrich': 'Yes' })).toBe(true);
    expect(servedByConfig(bare, 'x', { 'user.enrich': 'no' })).toBe(false);
    expect(servedByConfig(valued, 'x', { 'user.scope': 'global' })).toBe(true);
    expect(servedByConfig(valued, 'x', { 'user.scope': 'local' })).toBe(false);
    expect(servedByConfig(valued, 'x', {})).toBe(false);
  });
});

describe('daemon keys: the server, the monitor address, NATS credentials', () => {
  it('reads the Incus server, the listen address and NATS credentials; defaults to the local socket and :9153', () => {
    expect(parseEnricherConfig({}).settings).toMatchObject({ incus: {}, http: { port: 9153 } });
    const { settings } = parseEnricherConfig({
      incus: { url: 'https://incus.example.net:8443', client_cert: '/c.crt', client_key: '/c.key', server_fingerprint: 'ab'.repeat(32) },
      http: '127.0.0.1:9100',
      outputs: { nats: { url: 'nats://a:4222, nats://b:4222', user: 'enricher', password: 'pw', tls: { ca: '/ca.pem' }, max_held: 5 } },
    });
    expect(settings.incus).toEqual({
      url: 'https://incus.example.net:8443',
      clientCert: '/c.crt',
      clientKey: '/c.key',
      serverFingerprint: 'ab'.repeat(32),
    });
    expect(settings.http).toEqual({ host: '127.0.0.1', port: 9100 });
    expect(settings.outputs.nats).toEqual({
      servers: ['nats://a:4222', 'nats://b:4222'],
      subjectPrefix: 'incus.events',
      name: 'rxfleet-enrich',
      user: 'enricher',
      password: 'pw',
      tls: { ca: '/ca.pem' },
      maxHeld: 5,
    });
    expect(parseEnricherConfig({ http: '' }).settings.http).toBeUndefined();
  });

  it('takes credentials out of a NATS URL, so the servers it logs carry none; keys win over the URL', () => {
    expect(splitNatsUrls('nats://u:p%40ss@h:4222,h2:4222')).toEqual({
      servers: ['nats://h:4222', 'h2:4222'],
      credentials: { user: 'u', password: 'p@ss' },
    });
    expect(
      parseEnricherConfig({ outputs: { nats: { url: 'nats://u:secret@h:4222', password: 'other' } } }).settings.outputs.nats,
    ).toMatchObject({ servers: ['nats://h:4222'], user: 'u', password: 'other' });
  });

  it('parses listen addresses, refusing what is not one, alongside every other problem', () => {
    expect(['9153', ':9153', '0.0.0.0:80', '[::1]:9153', 'localhost:0'].map(parseListenAddress)).toEqual([
      { port: 9153 },
      { port: 9153 },
      { host: '0.0.0.0', port: 80 },
      { host: '::1', port: 9153 },
      { host: 'localhost', port: 0 },
    ]);
    for (const bad of ['nowhere', 'h:', ':70000', 'a b:1']) expect(() => parseListenAddress(bad)).toThrow(/expected \[host\]:port/);
    expect(problemsOf({ http: 'x', workers: 0 })).toEqual([
      'workers: expected a number >= 1, got 0',
      'http: expected [host]:port such as :9153 or 127.0.0.1:9153 ("" for none), got "x"',
    ]);
    expect(problemsOf({ incus: { url: 5, pin: 'x' } })).toEqual(['incus.pin: unknown key', 'incus.url: expected a string, got 5']);
  });
});
