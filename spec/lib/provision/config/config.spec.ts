import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { REDACTED_PATHS } from '../../../../lib/logger';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError, parseProvisionerConfig, requireValidConfig } from '../../../../lib/provision/config/config';
import { loadProvisionerConfig } from '../../../../streams/provisionerConfigFile';
import { DEFAULT_CERT_DENY_LIST } from '../../../../lib/provision/credentials/certDenyList';

const parse = (text: string, exists: (p: string) => boolean = () => false) => parseProvisionerConfig(text, { cpus: 6, exists });
const errors = (text: string) => parse(text).problems.filter((p) => p.severity === 'error');
const warnings = (text: string) => parse(text).problems.filter((p) => p.severity === 'warning');
const valid = (text: string) => requireValidConfig(parse(text));

describe('parseProvisionerConfig: defaults', () => {
  it("a file with only a helper gets upstream's defaults, P6 logging and rxfleet's own", () => {
    const result = parse('helper: /usr/local/bin/helper\n');
    expect(result.problems).toEqual([]);
    expect(result.config).toEqual({
      file: undefined,
      workers: 6,
      interval: '1m',
      intervalMs: 60_000,
      logDestination: 'stdout',
      logLevel: 'info',
      helper: '/usr/local/bin/helper',
      token: '',
      lifecycleComponent: 'provision_mode_server',
      choriaInsecure: false,
      site: '',
      monitorPort: 0,
      brokerProvisioningPassword: '',
      certDenyList: [...DEFAULT_CERT_DENY_LIST],
      jwtVerifyCert: '',
      jwtSigningKey: '',
      jwtSigningToken: '',
      serverJwtValidity: '1y',
      serverJwtValidityMs: 365 * 24 * 3_600_000,
      leaderElection: false,
      upgradesRepository: '',
      upgradesOptional: false,
      features: { pki: false, jwt: false, ed25519: false, upgrades: false },
      rxfleet: {
        natsServers: [],
        natsUser: undefined,
        natsPassword: undefined,
        natsCredentials: undefined,
        queueCapacity: 50_000,
        shutdownGraceMs: 30_000,
        helperTimeoutMs: 10_000,
        electionApiPrefix: 'choria.streams',
        electionCandidateIntervalMs: undefined,
        dnsServers: [],
        mode: 'single',
        helperMode: 'per-node',
        helperProcesses: 6,
        claimsBucket: 'RXFLEET_PROVISIONER_CLAIMS',
        claimsApiPrefix: 'choria.streams',
        // P22: a failing node's wait grows to an hour; P21: no records unless asked for.
        failureBackoffMs: 3_600_000,
        records: undefined,
      },
    });
    expect(result.config?.rxfleet.records).toBeUndefined();
  });

  it('reads the upstream RPM default configuration', () => {
    const config = valid(
      [
        'workers: 4',
        'interval: 5m',
        'logfile: /var/log/choria-provisioner.log',
        'loglevel: info',
        'helper: /etc/choria-provisioner/helper',
        'token: toomanysecrets',
        'choria_insecure: true',
        'site: TEST',
        'monitor_port: 8080',
        'jwt_verify_cert: /etc/choria-provisioner/jwt-verify.pem',
        'features:',
        '  pki: true',
        '  jwt: true',
      ].join('\n'),
    );
    expect(config).toMatchObject({
      workers: 4,
      intervalMs: 300_000,
      logDestination: { file: '/var/log/choria-provisioner.log' },
      token: 'toomanysecrets',
      choriaInsecure: true,
      site: 'TEST',
      monitorPort: 8080,
      features: { pki: true, jwt: true, ed25519: false, upgrades: false },
    });
  });

  it('ed25519 forces jwt on, as upstream', () => {
    const config = valid('helper: h\njwt_verify_cert: abcd\njwt_signing_key: /k\nfeatures: {ed25519: true}\n');
    expect(config.features).toEqual({ pki: false, jwt: true, ed25519: true, upgrades: false });
  });

  it('an empty lifecycle_component and an empty cert_deny_list take the defaults, as upstream', () => {
    const config = valid('helper: h\nlifecycle_component: ""\ncert_deny_list: []\n');
    expect(config.lifecycleComponent).toBe('provision_mode_server');
    expect(config.certDenyList).toEqual([...DEFAULT_CERT_DENY_LIST]);
  });

  it("a key set to null keeps its default, as Go's json does", () => {
    expect(valid('helper: h\nworkers: ~\ninterval:\n').intervalMs).toBe(60_000);
  });

  it.each([
    ['stdout', 'stdout'],
    ['stderr', 'stderr'],
    ['discard', 'discard'],
    ['""', 'stdout'],
    ['/var/log/p.log', { file: '/var/log/p.log' }],
    ['Discard', 'discard'],
    ['STDERR', 'stderr'],
  ])('logfile %s logs to %j (P6, and any case of the three words, as go-choria)', (value, destination) => {
    expect(valid(`helper: h\nlogfile: ${value}\n`).logDestination).toEqual(destination);
  });

  it.each([
    ['', 'info'],
    ['logfile: stdout', 'info'],
    ['logfile: /var/log/p.log', 'warn'],
    ['logfile: /var/log/p.log\nloglevel: info', 'info'],
    ['loglevel: debug', 'debug'],
  ])("with %j the level is %s: without loglevel, upstream's warn into a log file, rxfleet's info on stdout", (lines, level) => {
    expect(valid(`helper: h\n${lines}\n`).logLevel).toBe(level);
  });

  it("durations use Choria's units", () => {
    const config = valid('helper: h\ninterval: 1d\nserver_jwt_validity: 52w\nrxfleet: {shutdown_grace: 2m, helper_timeout: 1500ms}\n');
    expect(config.intervalMs).toBe(86_400_000);
    expect(config.serverJwtValidityMs).toBe(52 * 7 * 86_400_000);
    expect(config.rxfleet.shutdownGraceMs).toBe(120_000);
    expect(config.rxfleet.helperTimeoutMs).toBe(1500);
  });

  it('the election settings: the JetStream API prefix and the candidate interval (P14)', () => {
    const config = valid('helper: h\nleader_election: true\nrxfleet: {election_api_prefix: $JS.API, election_candidate_interval: 15s}\n');
    expect(config.rxfleet.electionApiPrefix).toBe('$JS.API');
    expect(config.rxfleet.electionCandidateIntervalMs).toBe(15_000);
    expect(errors('helper: h\nrxfleet: {election_api_prefix: "a.>", election_candidate_interval: 10ms}\n').map((p) => p.path)).toEqual([
      'rxfleet.election_api_prefix',
      'rxfleet.election_candidate_interval',
    ]);
  });

  it('rxfleet.nats_servers takes a list or one comma-separated string', () => {
    expect(valid('helper: h\nrxfleet: {nats_servers: [a:4222, "nats://b:4222"]}\n').rxfleet.natsServers).toEqual([
      'a:4222',
      'nats://b:4222',
    ]);
    expect(valid('helper: h\nrxfleet: {nats_servers: "a:4222, b:4223"}\n').rxfleet.natsServers).toEqual(['a:4222', 'b:4223']);
  });
});

describe('parseProvisionerConfig: keys', () => {
  it("matches keys case-insensitively, as Go's json, in every section", () => {
    const config = valid('Helper: h\nWORKERS: 2\nFeatures: {PKI: true}\nRxFleet: {Queue_Capacity: 10}\n');
    expect(config.workers).toBe(2);
    expect(config.features.pki).toBe(true);
    expect(config.rxfleet.queueCapacity).toBe(10);
  });

  it('reads YAML 1.1 booleans as go-yaml v2 does', () => {
    expect(valid('helper: h\nleader_election: yes\nchoria_insecure: on\n')).toMatchObject({ leaderElection: true, choriaInsecure: true });
  });

  it('warns about each unknown key by its path, with a suggestion when one is close', () => {
    expect(warnings('helper: h\nwrkers: 2\nmystery: 1\nfeatures: {pkl: true}\nrxfleet: {queue: 1}\n')).toEqual([
      { path: 'wrkers', message: 'unknown key, ignored (did you mean workers?)', severity: 'warning' },
      { path: 'mystery', message: 'unknown key, ignored', severity: 'warning' },
      { path: 'features.pkl', message: 'unknown key, ignored (did you mean features.pki?)', severity: 'warning' },
      { path: 'rxfleet.queue', message: 'unknown key, ignored', severity: 'warning' },
    ]);
  });

  it('accepts broker_port and rego_policy with one deprecation warning each (P15)', () => {
    const result = parse('helper: h\nbroker_port: 4222\nrego_policy: /etc/p.rego\n');
    expect(result.config).toBeDefined();
    expect(result.problems.map((p) => [p.path, p.severity])).toEqual([
      ['broker_port', 'warning'],
      ['rego_policy', 'warning'],
    ]);
    expect(result.problems[0].message).toMatch(/^deprecated: .*accepted and ignored/);
  });

  it('warns when a key is given twice in different cases; the last wins', () => {
    const result = parse('helper: h\nworkers: 2\nWorkers: 3\n');
    expect(result.config?.workers).toBe(3);
    expect(result.problems).toEqual([
      { path: 'workers', message: 'given twice (as workers and Workers); the last one wins', severity: 'warning' },
    ]);
  });
});

describe('parseProvisionerConfig: refusals', () => {
  it('refuses type mismatches with the path and what was expected', () => {
    expect(errors('helper: h\nworkers: "4"\nfeatures: {pki: 1}\nmonitor_port: 70000\ncert_deny_list: x\nsite: [a]\n')).toEqual([
      { path: 'workers', message: 'expected a whole number >= 0 (0 means one per CPU), got "4" (a string)', severity: 'error' },
      { path: 'site', message: 'expected a string, got a list', severity: 'error' },
      { path: 'monitor_port', message: 'expected a port number from 0 (off) to 65535, got 70000', severity: 'error' },
      { path: 'cert_deny_list', message: 'expected a list of regular expressions, got "x" (a string)', severity: 'error' },
      { path: 'features.pki', message: 'expected true or false, got 1', severity: 'error' },
    ]);
  });

  it('never echoes a secret it refuses', () => {
    const problems = errors('helper: h\ntoken: 918273645\nbroker_provisioning_password: [hunter2]\nrxfleet: {nats_password: 5551234}\n');
    expect(problems.map((p) => p.path)).toEqual(['token', 'broker_provisioning_password', 'rxfleet.nats_password']);
    const text = JSON.stringify(problems);
    for (const secret of ['918273645', 'hunter2', '5551234']) expect(text).not.toContain(secret);
  });

  it('collects every problem at once, schema and semantic alike', () => {
    const problems = errors(
      [
        'workers: -1',
        'interval: 30s',
        'loglevel: [verbose]',
        'lifecycle_component: "a.b"',
        'cert_deny_list: ["ok$", "(unclosed"]',
        'features: {pki: true, ed25519: true}',
        'upgrades_repository: ftp://x',
        'server_jwt_validity: 5H',
        'rxfleet: {queue_capacity: 0, nats_servers: ["bad server"], helper_timeout: 0s}',
      ].join('\n'),
    );
    expect(problems.map((p) => p.path)).toEqual([
      'workers',
      'loglevel',
      'upgrades_repository',
      'rxfleet.nats_servers[0]',
      'rxfleet.queue_capacity',
      'interval',
      'server_jwt_validity',
      'rxfleet.helper_timeout',
      'lifecycle_component',
      'cert_deny_list[1]',
      'features',
    ]);
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p.message]));
    expect(byPath.interval).toMatch(/expected at least 1m .*got "30s"/);
    expect(byPath.loglevel).toBe('expected one of debug, info, warn, error or fatal, got a list');
    expect(byPath.server_jwt_validity).toBe(
      'invalid duration "5H" (time: unknown unit "H" in duration "5H"); valid examples are 10m, 1h, 1d',
    );
    expect(byPath.features).toBe('can only enable one of pki or ed25519 features');
    expect(byPath.lifecycle_component).toMatch(/^invalid lifecycle component "a.b"/);
    expect(byPath['cert_deny_list[1]']).toMatch(/^expected a regular expression: invalid pattern "\(unclosed"/);
  });

  it.each(['a>b', 'a*', 'a.b'])('refuses lifecycle_component %j, as upstream', (component) => {
    expect(errors(`helper: h\nlifecycle_component: "${component}"\n`).map((p) => p.path)).toEqual(['lifecycle_component']);
  });
  it('warns about a jwt_verify_cert that is neither a file nor a hex key, and missing key files', () => {
    expect(warnings('helper: h\njwt_verify_cert: /nope.pem\njwt_signing_key: /nope.seed\n').map((p) => p.path)).toEqual([
      'jwt_verify_cert',
      'jwt_signing_key',
    ]);
    expect(warnings(`helper: h\njwt_verify_cert: ${'ab'.repeat(32)}\n`)).toEqual([]);
    expect(parse('helper: h\njwt_verify_cert: /exists.pem\n', (p) => p === '/exists.pem').problems).toEqual([]);
  });

  it('an indentation error names the line that is wrong, once', () => {
    // Line 5 is indented deeper than the key above it: yaml places the error on line 4.
    expect(errors('helper: h\nchoria_insecure: true\nrxfleet:\n  shutdown_grace: 10s\n   queue_capacity: 5\nsite: x\n')).toEqual([
      {
        path: 'rxfleet.shutdown_grace',
        severity: 'error',
        message:
          'not valid YAML at line 5, column 4: the line is indented more than line 4 above it (a key must line up with the keys beside it)',
      },
    ]);
    // Indented less than the keys it belongs with: yaml already names that line.
    expect(errors('helper: h\nfeatures:\n  pki: true\n jwt: true\n').map((p) => p.message)).toEqual([
      'not valid YAML at line 4, column 1: the indentation is wrong',
    ]);
  });

  it('refuses YAML that does not parse, naming the key and the line but not quoting it', () => {
    const problems = errors('helper: h\ntoken: [s3cret\n');
    expect(problems).toHaveLength(1);
    expect(problems[0].path).toMatch(/^token/);
    expect(problems[0].message).toMatch(/^not valid YAML at line \d+, column \d+: /);
    expect(problems[0].message).not.toContain('s3cret');
  });

  // Issue 14 item 3: yaml's conversion threw these past the error handling (a bare `rxfleet: ...`
  // line), one of them echoing the token written unquoted.
  it.each([
    [
      'an unquoted token read as an unresolved alias',
      'helper: h\ntoken: *Zq9-secret-token\n',
      'token',
      /^not valid YAML \(line 2\): an alias \(\*name\) names no anchor/,
    ],
    [
      'an alias bomb',
      'a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
      'c',
      /too many aliases: refused as a resource exhaustion attack/,
    ],
    ['a merge of a number', 'helper: h\n<<: 5\n', '<<', /a merge key \(<<\) must name a mapping/],
    [
      'a merge of a string inside a section',
      'helper: h\nrxfleet:\n  <<: Zq9-secret-token\n',
      'rxfleet.<<',
      /a merge key \(<<\) must name a mapping/,
    ],
    [
      'a nested unresolved alias',
      'helper: h\nrxfleet:\n  nats_password: *Zq9-secret-token\n',
      'rxfleet.nats_password',
      /^not valid YAML \(line 3\): an alias/,
    ],
  ])('refuses %s with the key and no secret, never throwing', (_what, text, path, message) => {
    const problems = errors(text);
    expect(problems).toHaveLength(1);
    expect(problems[0].path).toBe(path);
    expect(problems[0].message).toMatch(message);
    expect(JSON.stringify(problems)).not.toContain('Zq9');
  });

  it('refuses a top level that is not a mapping', () => {
    expect(errors('- a\n- b\n')).toEqual([
      { path: 'configuration', message: 'expected a mapping of keys to values at the top level, got a list', severity: 'error' },
    ]);
  });

  it('requireValidConfig throws one error naming every refused key', () => {
    expect(() => requireValidConfig(parse('workers: x\ninterval: 1s\n'))).toThrow(ConfigurationError);
    expect(() => requireValidConfig(parse('workers: x\ninterval: 1s\n'))).toThrow(
      /^Provisioning could not be configured: workers: .*; interval: .*"1s"$/,
    );
  });
});

// DECISIONS: a file the Go provisioner starts with, rxfleet starts with (warning where every node
// would fail); a value upstream would misread is refused with the key's path and what was expected.
describe('parseProvisionerConfig: files upstream starts with', () => {
  const starts = (text: string) => {
    const result = parse(text);
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(result.config).toBeDefined();
    return { config: result.config!, warnings: result.problems.map((p) => `${p.path}: ${p.message}`) };
  };

  it('server_jwt_validity: "" is upstream\'s one year, without a word', () => {
    const { config, warnings } = starts('helper: h\nserver_jwt_validity: ""\n');
    expect(config.serverJwtValidityMs).toBe(365 * 24 * 3_600_000);
    expect(config.serverJwtValidity).toBe('1y');
    expect(warnings).toEqual([]);
  });

  it.each(['trace', 'verbose', 'Debug'])(
    'loglevel: %s logs at warn, as upstream does with a level it does not know, and says so',
    (level) => {
      const { config, warnings } = starts(`helper: h\nloglevel: ${level}\n`);
      expect(config.logLevel).toBe('warn');
      expect(warnings).toEqual([
        `loglevel: "${level}" is not one of debug, info, warn, error or fatal: logging at warn, as upstream does with a level it does not know`,
      ]);
    },
  );

  it.each([
    [
      'no helper at all',
      'site: x\n',
      'helper: not set: every node will fail at the helper step (cannot parse helper command: empty), as upstream',
    ],
    [
      'a blank helper',
      'helper: "   "\n',
      'helper: not set: every node will fail at the helper step (cannot parse helper command: empty), as upstream',
    ],
    [
      'a helper that cannot be split',
      'helper: "/bin/h \'unterminated"\n',
      'helper: cannot parse helper command: Unterminated single-quoted string: every node will fail at the helper step, as upstream',
    ],
  ])('%s: starts, warning that every node will fail at the helper', (_name, yaml, warning) => {
    expect(starts(yaml).warnings).toEqual([warning]);
  });

  it('features.jwt without jwt_verify_cert, ed25519 without jwt_signing_key, upgrades without a repository: start, warning', () => {
    expect(starts('helper: h\nfeatures: {jwt: true}\n').warnings).toEqual([
      'jwt_verify_cert: not set while features.jwt is on: every node will fail JWT validation (no JWT verification certificate configured), as upstream',
    ]);
    expect(starts('helper: h\nfeatures: {ed25519: true}\n').warnings.map((w) => w.split(':')[0])).toEqual([
      'jwt_verify_cert',
      'jwt_signing_key',
    ]);
    expect(starts('helper: h\nfeatures: {upgrades: true}\n').warnings.map((w) => w.split(':')[0])).toEqual(['upgrades_repository']);
    expect(starts('helper: h\nfeatures: {upgrades: true}\nupgrades_optional: true\n').warnings).toEqual([]);
    expect(starts('helper: h\nfeatures: {upgrades: true}\nupgrades_repository: https://repo.example.net/choria\n').warnings).toEqual([]);
  });

  it('a lifecycle component with a space starts, warning that startup events cannot be heard', () => {
    const { config, warnings } = starts('helper: h\nlifecycle_component: "provision mode"\n');
    expect(config.lifecycleComponent).toBe('provision mode');
    expect(warnings).toEqual([
      'lifecycle_component: "provision mode" contains white space, which no NATS subject may: startup events cannot be listened for, so nodes are found by discovery only (upstream starts the same way)',
    ]);
  });

  it('refuses what upstream would misread: a negative worker count, a deny-list pattern that never matches', () => {
    expect(errors('helper: h\nworkers: -2\n').map((p) => p.path)).toEqual(['workers']);
    expect(errors('helper: h\ncert_deny_list: ["(unclosed"]\n').map((p) => p.path)).toEqual(['cert_deny_list[0]']);
  });
});

describe('parseProvisionerConfig: records and backoff (P21, P22)', () => {
  it('records: one key turns them on, with the stream, subjects and limits of the defaults', () => {
    expect(valid('helper: h\nrxfleet: {records: false}\n').rxfleet.records).toBeUndefined();
    expect(valid('helper: h\nrxfleet: {records: yes}\n').rxfleet.records).toEqual({
      stream: 'RXFLEET_PROVISIONER_RECORDS',
      subject: 'rxfleet.provisioner.records',
      apiPrefix: 'choria.streams',
      create: false,
      replicas: 0,
      maxAgeMs: 7 * 24 * 3_600_000,
      maxBytes: 1024 ** 3,
      perNode: 50,
      everyMs: 10_000,
    });
    const named = valid(
      'helper: h\nrxfleet: {records: true, records_stream: OPS, records_subject: ops.prov, records_api_prefix: $JS.API, records_create: true, records_replicas: 3, records_max_age: 2d, records_max_bytes: 0, records_per_node: 10, records_every: 2s}\n',
    );
    expect(named.rxfleet.records).toEqual({
      stream: 'OPS',
      subject: 'ops.prov',
      apiPrefix: '$JS.API',
      create: true,
      replicas: 3,
      maxAgeMs: 2 * 24 * 3_600_000,
      maxBytes: 0,
      perNode: 10,
      everyMs: 2_000,
    });
  });

  it('refuses a records stream or subject a server would refuse, and limits out of range, each by its path', () => {
    expect(
      errors(
        'helper: h\nrxfleet: {records: true, records_stream: "a.b", records_subject: "ops.>", records_replicas: 7, records_max_age: 10s, records_per_node: 0}\n',
      ).map((p) => p.path),
    ).toEqual([
      'rxfleet.records_stream',
      'rxfleet.records_subject',
      'rxfleet.records_replicas',
      'rxfleet.records_per_node',
      'rxfleet.records_max_age',
    ]);
  });

  it("failure_backoff: the ceiling of a failing node's wait, an hour by default, 0 for upstream's every sighting", () => {
    expect(valid('helper: h\n').rxfleet.failureBackoffMs).toBe(3_600_000);
    expect(valid('helper: h\nrxfleet: {failure_backoff: 6h}\n').rxfleet.failureBackoffMs).toBe(6 * 3_600_000);
    expect(valid('helper: h\nrxfleet: {failure_backoff: "0"}\n').rxfleet.failureBackoffMs).toBe(0);
    expect(valid('helper: h\nrxfleet: {failure_backoff: 0}\n').rxfleet.failureBackoffMs).toBe(0);
    expect(errors('helper: h\nrxfleet: {failure_backoff: soon}\n').map((p) => p.path)).toEqual(['rxfleet.failure_backoff']);
  });
});

describe('parseProvisionerConfig: the Incus feed (rxfleet.incus)', () => {
  it('is off without the section; `incus: {}` turns it on with every default', () => {
    expect(valid('helper: h\n').rxfleet.incus).toBeUndefined();
    const feed = valid('helper: h\nrxfleet:\n  incus: {}\n').rxfleet.incus;
    expect(feed).toMatchObject({ subjectPrefix: 'incus.events', projects: { mode: 'all' }, instances: { mode: 'all' } });
    expect(feed?.identity.text).toBe('{name}');
  });

  it('reads the selectors as the enricher does, and the identity template; keys fold case-insensitively', () => {
    const feed = valid(
      'helper: h\nrxfleet:\n  Incus:\n    Subject_Prefix: site.incus\n    projects: [default, p2]\n    instances: ["user.choria=provision", "web-*"]\n    identity: "{name}.{project}.example.net"\n',
    ).rxfleet.incus;
    expect(feed?.subjectPrefix).toBe('site.incus');
    expect(feed?.projects).toEqual({ mode: 'list', names: ['default', 'p2'] });
    expect(feed?.instances).toEqual({
      mode: 'match',
      selectors: [
        { kind: 'label', key: 'user.choria', values: ['provision'] },
        { kind: 'name', pattern: 'web-*' },
      ],
    });
    expect(feed?.identity.fill({ name: 'web1', project: 'p2', config: {} })).toEqual({ ok: true, identity: 'web1.p2.example.net' });
    expect(valid('helper: h\nrxfleet:\n  incus: {projects: "user.choria=yes", instances: "db-?"}\n').rxfleet.incus).toMatchObject({
      projects: { mode: 'marker', key: 'user.choria', values: ['yes'] },
      instances: { mode: 'match' },
    });
  });

  it('refuses every bad key of the section at once, each with its path; warns about unknown keys and an empty section', () => {
    const text =
      'helper: h\nrxfleet:\n  incus:\n    subject_prefix: "incus.>"\n    instances: ["web-*", "=x", "a b"]\n    identity: "{nam}.example.net"\n    selector: x\n';
    expect(errors(text).map((p) => p.path)).toEqual([
      'rxfleet.incus.subject_prefix',
      'rxfleet.incus.instances[1]',
      'rxfleet.incus.instances[2]',
      'rxfleet.incus.identity',
    ]);
    expect(errors(text)[3].message).toBe('unknown placeholder {nam}: use {name}, {project} or {config.KEY}');
    expect(warnings(text).map((p) => p.path)).toEqual(['rxfleet.incus.selector']);
    expect(
      errors('helper: h\nrxfleet:\n  incus: {identity: "{config.volatile.eth0.hwaddr}", projects: 3}\n').map(
        (p) => `${p.path}: ${p.message}`,
      ),
    ).toEqual([
      'rxfleet.incus.projects: expected a list of project names, or one KEY=VALUE marker on the project configuration, got 3',
      'rxfleet.incus.identity: {config.volatile.eth0.hwaddr}: the enricher never publishes volatile.* keys, so no instance would map',
    ]);
    expect(errors('helper: h\nrxfleet:\n  incus: yes\n').map((p) => p.path)).toEqual(['rxfleet.incus']);
    const empty = parse('helper: h\nrxfleet:\n  incus:\n');
    expect(empty.config?.rxfleet.incus).toBeUndefined();
    expect(empty.problems).toEqual([
      {
        path: 'rxfleet.incus',
        severity: 'warning',
        message: 'empty, so the Incus feed is off: write `incus: {}` to turn it on with every default',
      },
    ]);
  });
});

describe('a parsed configuration in a log line', () => {
  it("has its secrets redacted by the daemon logger's paths", () => {
    const config = valid('helper: h\ntoken: tok-918273\nbroker_provisioning_password: pw-564738\nrxfleet: {nats_password: nats-192837}\n');
    const lines: string[] = [];
    const logger = pino(
      { redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
      new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }),
    );
    logger.info({ config }, 'starting');
    expect(lines).toHaveLength(1);
    for (const secret of ['tok-918273', 'pw-564738', 'nats-192837']) expect(lines[0]).not.toContain(secret);
    expect(lines[0]).toContain('"helper":"h"');
  });
});

describe('loadProvisionerConfig', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the file and keeps its name', () => {
    const file = join(dir, 'p.yaml');
    writeFileSync(file, 'helper: /bin/h\n');
    expect(requireValidConfig(loadProvisionerConfig(file)).file).toBe(file);
  });

  it('a missing file is one error', () => {
    const file = join(dir, 'absent.yaml');
    expect(loadProvisionerConfig(file)).toEqual({
      config: undefined,
      problems: [{ path: file, message: `file ${file} not found`, severity: 'error' }],
    });
  });
});
