import { createTestCa } from '../helpers/testCa';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { loadEnrichSettings } from '../../bin/enrich/commandLine';
import { parseChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ENRICHER_CONFIG_SCHEMA } from '../../lib/enricher/config/config';
import { DEPRECATED_KEYS, SECTION_KEYS } from '../../lib/provision/config/configSchema';
import { parseProvisionerConfig, requireValidConfig } from '../../lib/provision/config/config';
import { useNatsServer } from '../helpers/nats';
import { RXFLEET_BIN, RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// Every file in examples/ is checked here (or, for the sample helpers, in
// spec/lib/provision/helper/exampleHelpers.spec.ts): an example that stops working fails the suite.
const root = resolve(__dirname, '../..');
const examples = join(root, 'examples');
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

let home: string;
beforeAll(() => (home = mkdtempSync(join(tmpdir(), 'rxfleet-examples-'))));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** The built command from the repository's root, with an empty HOME (no Choria configuration found). */
async function rxfleet(...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [RXFLEET_BIN, ...args], {
      cwd: root,
      timeout: 60_000,
      env: { ...process.env, HOME: home },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? filesUnder(join(dir, name)) : [join(dir, name)]));
}

describe('examples/', () => {
  it('holds the examples this spec checks, and nothing unchecked', () => {
    expect(
      filesUnder(examples)
        .map((f) => relative(examples, f))
        .sort(),
    ).toEqual(
      [
        'choria.cfg',
        'enricher.yaml',
        'grafana/rxfleet-enricher.json',
        'grafana/rxfleet-provisioner.json',
        'helpers/ed25519-helper.mjs',
        'helpers/minimal-helper.mjs',
        // Checked by spec/streams/helper/persistentSamples.spec.ts.
        'helpers/persistent-helper.mjs',
        'helpers/persistent-helper.sh',
        'logrotate/rxfleet',
        'provisioner-full.yaml',
        'provisioner-minimal.yaml',
        'systemd/rxfleet-enrich.service',
        'systemd/rxfleet-provision.service',
      ].sort(),
    );
  });
});

describe('examples/provisioner-minimal.yaml', () => {
  const server = useNatsServer({ jetstream: false });
  const running: RxfleetProcess[] = [];
  afterEach(() => killAll(running.splice(0)));

  it("passes validate (one warning: no Choria client configuration, so go-choria's defaults with rxfleet.nats_servers)", async () => {
    const { code, stdout } = await rxfleet('validate', '--config', 'examples/provisioner-minimal.yaml');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^warning: \S+: no Choria client configuration found at the default locations; using go-choria's defaults/);
    expect(lines[1]).toMatch(/^security provider file: caller choria=\S+, TLS off, requests v1, unsigned$/);
    expect(lines[2]).toMatch(
      /^examples\/provisioner-minimal\.yaml: OK with 1 warning: .* helper examples\/helpers\/minimal-helper\.mjs, .* 1 NATS server$/,
    );
  });

  it('provisions a fleet from rxfleet simulate', async () => {
    const provisioner = startRxfleet(['provision', '--config', 'examples/provisioner-minimal.yaml', '--nats', server().url], {
      cwd: root,
      env: { ...process.env, HOME: home },
    });
    running.push(provisioner);
    await waitFor(() => provisioner.lines.some((l) => l.msg === 'connected to NATS'), 'the provisioner to connect');
    const fleet = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      '10',
      '--restart-delay',
      '100ms',
      '--exit-when-provisioned',
      '--json',
      '--report-every',
      '0',
    ]);
    running.push(fleet);
    expect((await fleet.exited).code).toBe(0);
    expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', nodes: 10, provisioned: 10, duplicates: 0 });
    provisioner.child.kill('SIGTERM');
    expect((await provisioner.exited).code).toBe(0);
  });
});

describe('examples/provisioner-full.yaml with examples/choria.cfg', () => {
  let site: string;
  let config: string;
  let choria: string;

  // The files the examples name, made under a scratch root: /etc/choria-provisioner/... there.
  beforeAll(async () => {
    site = mkdtempSync(join(tmpdir(), 'rxfleet-site-'));
    const at = (path: string): string => join(site, path);
    const rewrite = (text: string): string => text.replaceAll('/etc/choria-provisioner/', `${at('etc/choria-provisioner')}/`);
    // Real material: the daemon reads the key to sign requests with it (and says so when it cannot).
    const ca = await createTestCa();
    const leaf = await ca.issue('provisioner.example.net');
    const contents: Record<string, string> = {
      'ssl/provisioner.pem': leaf.cert,
      'ssl/provisioner.key': leaf.key,
      'ssl/ca.pem': ca.cert,
      'helper.rb': '',
    };
    for (const [file, text] of Object.entries(contents)) {
      mkdirSync(dirname(at(`etc/choria-provisioner/${file}`)), { recursive: true });
      writeFileSync(at(`etc/choria-provisioner/${file}`), text);
    }
    chmodSync(at('etc/choria-provisioner/helper.rb'), 0o755);
    config = at('choria-provisioner.yaml');
    choria = at('choria.cfg');
    writeFileSync(config, rewrite(readFileSync(join(examples, 'provisioner-full.yaml'), 'utf8')));
    writeFileSync(choria, rewrite(readFileSync(join(examples, 'choria.cfg'), 'utf8')));
  });
  afterAll(() => rmSync(site, { recursive: true, force: true }));

  it('passes validate --strict once the files it names exist', async () => {
    const { code, stdout } = await rxfleet('validate', '--config', config, '--choria-config', choria, '--strict');
    expect(stdout.trim().split('\n')).toEqual([
      `security provider file: caller choria=provisioner.example.net, TLS mutual, verified, requests v1, signed with the x509 key; key ${join(site, 'etc/choria-provisioner/ssl')}/provisioner.key, certificate ${join(site, 'etc/choria-provisioner/ssl')}/provisioner.pem, CA ${join(site, 'etc/choria-provisioner/ssl')}/ca.pem`,
      `${config}: OK: 4 workers, interval 5m, features none, helper ${join(site, 'etc/choria-provisioner/helper.rb')}, site "production", /metrics on port 8080, no leader election; choria config ${choria}: identity provisioner.example.net, 1 NATS server`,
    ]);
    expect(code).toBe(0);
  });

  it('names every key of the configuration, deprecated ones aside', () => {
    const text = readFileSync(join(examples, 'provisioner-full.yaml'), 'utf8');
    const keys = [
      ...SECTION_KEYS[''].filter((k) => !(k in DEPRECATED_KEYS) && k !== 'features' && k !== 'rxfleet'),
      ...SECTION_KEYS.features,
      ...SECTION_KEYS.rxfleet,
      ...SECTION_KEYS['rxfleet.incus'],
    ];
    for (const key of keys) expect(`${key}: ${new RegExp(`^\\s*#?\\s*${key}:`, 'm').test(text)}`).toBe(`${key}: true`);
    // What is not commented out is a valid file on its own (checked above); the commented keys parse too.
    expect(() => parse(text.replace(/^(\s*)# (nats_\w+:)/gm, '$1$2'))).not.toThrow();
    // The Incus feed's block, uncommented, is the feed with every default.
    const uncommented = text.replace(/^ {2}# (incus:)$/m, '  $1').replace(/^ {2}# {3}(\w+:)/gm, '    $1');
    const feed = requireValidConfig(parseProvisionerConfig(uncommented)).rxfleet.incus;
    expect(feed).toMatchObject({ subjectPrefix: 'incus.events', projects: { mode: 'all' }, instances: { mode: 'all' } });
    expect(feed?.identity.text).toBe('{name}');
  });

  it('examples/choria.cfg is a file-provider configuration with no problem', () => {
    const { config: parsed, problems } = parseChoriaClientConfig(readFileSync(join(examples, 'choria.cfg'), 'utf8'), {
      file: 'choria.cfg',
    });
    expect(problems).toEqual([]);
    expect(parsed).toMatchObject({
      identity: 'provisioner.example.net',
      securityProvider: 'file',
      middlewareHosts: ['tls://broker.example.net:4222'],
    });
    expect([parsed.certificate, parsed.key, parsed.ca].every((f) => f?.startsWith('/etc/choria-provisioner/ssl/'))).toBe(true);
  });
});

describe('examples/enricher.yaml', () => {
  it('is read without a problem or a warning, and names every key of the configuration', () => {
    const file = join(examples, 'enricher.yaml');
    const { settings, warnings } = loadEnrichSettings({ config: file });
    expect(warnings).toEqual([]);
    expect(settings.incus).toEqual({ url: '/var/lib/incus/unix.socket' });
    expect(settings.outputs.nats).toMatchObject({ servers: ['nats://127.0.0.1:4222'], subjectPrefix: 'incus.events', maxHeld: 10_000 });
    expect(settings.http).toEqual({ host: '127.0.0.1', port: 9153 });
    const text = readFileSync(file, 'utf8');
    const keys = Object.keys(ENRICHER_CONFIG_SCHEMA.properties).filter((k) => k !== 'wants' && k !== 'config_exclude');
    // A section that changes how the daemon runs (a standby waits for an election) is shown commented out.
    for (const key of keys) expect(`${key}: ${new RegExp(`^(# )?${key}:`, 'm').test(text)}`).toBe(`${key}: true`);
    for (const key of ['jetstream', 'state']) expect(`${key}: ${new RegExp(`^ {2}# ${key}:`, 'm').test(text)}`).toBe(`${key}: true`);
  });
});

describe('examples/systemd/', () => {
  const units = ['rxfleet-provision.service', 'rxfleet-enrich.service'];
  let scratch: string;
  beforeAll(() => (scratch = mkdtempSync(join(tmpdir(), 'rxfleet-units-'))));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** `key=value` lines of the [Service] section. */
  const service = (unit: string): Map<string, string> => {
    const text = readFileSync(join(examples, 'systemd', unit), 'utf8');
    const section = text.slice(text.indexOf('[Service]'), text.indexOf('[Install]'));
    return new Map(
      section
        .split('\n')
        .filter((l) => /^\w+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  };

  it.each(units)('%s: systemd-analyze verify finds nothing to say (the bin path replaced by one that exists here)', async (unit) => {
    const copy = join(scratch, unit);
    copyFileSync(join(examples, 'systemd', unit), copy);
    writeFileSync(copy, readFileSync(copy, 'utf8').replace('/usr/bin/rxfleet', '/bin/true'));
    const { stdout, stderr } = await run('systemd-analyze', ['verify', copy]).catch((e: { stdout: string; stderr: string }) => e);
    expect(`${stdout}${stderr}`.trim()).toBe('');
  });

  it.each(units)(
    '%s: a dedicated user, restarted on failure, the first SIGTERM to the daemon alone, hardened without breaking Node',
    (unit) => {
      const s = service(unit);
      expect(s.get('User')).toBe('rxfleet');
      expect(s.get('Restart')).toBe('on-failure');
      expect(s.get('KillSignal')).toBe('SIGTERM');
      // mixed: the daemon drains and stops its helpers itself; SIGKILL for the rest only at the end.
      expect(s.get('KillMode')).toBe('mixed');
      // Longer than the grace period (30 s) plus the command's backstop (15 s).
      expect(Number(/^(\d+)s$/.exec(s.get('TimeoutStopSec') ?? '')?.[1])).toBeGreaterThan(45);
      for (const [key, value] of [
        ['NoNewPrivileges', 'yes'],
        ['ProtectSystem', 'strict'],
        ['ProtectHome', 'yes'],
        ['PrivateTmp', 'yes'],
        ['CapabilityBoundingSet', ''],
      ])
        expect(`${key}=${s.get(key)}`).toBe(`${key}=${value}`);
      // Node's JIT needs writable executable memory.
      expect(s.has('MemoryDenyWriteExecute')).toBe(false);
    },
  );

  it.each(units)('%s: ExecStart uses only flags its command takes', async (unit) => {
    const argv = (service(unit).get('ExecStart') ?? '').split(/\s+/);
    expect(argv[0]).toBe('/usr/bin/rxfleet');
    const command = argv[1];
    const { stdout } = await rxfleet(command, '--help');
    for (const flag of argv.filter((a) => a.startsWith('--'))) expect(`${flag}: ${stdout.includes(`  ${flag} `)}`).toBe(`${flag}: true`);
  });
});

describe('examples/logrotate/rxfleet', () => {
  it("rotates the provisioner's log file as the Go provisioner's package does: copied, then truncated in place", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-logrotate-'));
    try {
      // The packaged file with its directory and user moved into the scratch directory.
      const text = readFileSync(join(examples, 'logrotate', 'rxfleet'), 'utf8')
        .replace(/^\/var\/log\/rxfleet\//m, `${dir}/log/`)
        .replace('su rxfleet rxfleet', 'su root root');
      expect(text).toContain('copytruncate');
      mkdirSync(join(dir, 'log'));
      writeFileSync(join(dir, 'rotate.conf'), text);
      writeFileSync(join(dir, 'log', 'provisioner.log'), '{"level":"warning","msg":"one"}\n');
      await run('logrotate', ['--force', '--state', join(dir, 'state'), join(dir, 'rotate.conf')]);
      expect(readFileSync(join(dir, 'log', 'provisioner.log.1'), 'utf8')).toBe('{"level":"warning","msg":"one"}\n');
      expect(readFileSync(join(dir, 'log', 'provisioner.log'), 'utf8')).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rotates where the packaged unit lets the daemon write, as the user it runs as', () => {
    const unit = readFileSync(join(examples, 'systemd', 'rxfleet-provision.service'), 'utf8');
    const rotate = readFileSync(join(examples, 'logrotate', 'rxfleet'), 'utf8');
    expect(unit).toMatch(/^LogsDirectory=rxfleet$/m);
    expect(rotate).toMatch(/^\/var\/log\/rxfleet\/\*\.log \{$/m);
    expect(unit).toMatch(/^User=rxfleet$/m);
    expect(rotate).toMatch(/^ {2}su rxfleet rxfleet$/m);
  });
});
