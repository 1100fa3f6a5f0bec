import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RXFLEET_BIN, killAll, startRxfleet, RxfleetProcess } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// Runs the built command (`npm test` builds first), as a user would. HOME is an empty directory so
// no Choria client configuration is found at the default places (the test machine has none in /etc).
const bin = RXFLEET_BIN;
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function rxfleet(...args: string[]): Promise<Outcome> {
  return rxfleetWith({}, ...args);
}

async function rxfleetWith(env: Record<string, string | undefined>, ...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 60_000, env: { ...process.env, HOME: dir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let dir: string;
const file = (name: string, text: string, mode = 0o644): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-validate-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rxfleet validate', () => {
  it("prints a one-line summary and exits 0 for a good configuration, without the helper's arguments", async () => {
    const config = file(
      'good.yaml',
      `workers: 4\ninterval: 5m\nhelper: ${MINIMAL_HELPER} --token s3cret\nsite: TEST\nmonitor_port: 8080\nfeatures: {pki: true}\nchoria_insecure: true\n`,
    );
    const choria = file('client.cfg', 'identity = prov1.example.net\nplugin.choria.middleware_hosts = broker:4222\n');
    const { code, stdout } = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      'security provider file: caller choria=prov1.example.net, TLS off, requests v1, unsigned',
      `${config}: OK: 4 workers, interval 5m, features pki, helper ${MINIMAL_HELPER}, site "TEST", /metrics on port 8080, no leader election; choria config ${choria}: identity prov1.example.net, 1 NATS server`,
    ]);
    expect(stdout).not.toContain('s3cret');
  });

  it('names the Incus feed in the summary when it is on, and refuses its bad keys as provision does', async () => {
    const choria = file('feed.cfg', 'identity = a\nplugin.choria.middleware_hosts = b:4222\n');
    const on = file(
      'feed.yaml',
      `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\nrxfleet:\n  incus: {subject_prefix: site.incus, identity: "{name}.example.net"}\n`,
    );
    const good = await rxfleet('validate', '--config', on, '--choria-config', choria);
    expect(good.code).toBe(0);
    expect(good.stdout).toContain(
      ', no leader election, Incus feed from site.incus.*.instance.> with identity {name}.example.net; choria config',
    );
    const bad = file('badfeed.yaml', `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\nrxfleet:\n  incus: {identity: "{hostname}"}\n`);
    const refused = await rxfleet('validate', '--config', bad, '--choria-config', choria);
    expect(refused.code).toBe(1);
    expect(refused.stdout.trim().split('\n')).toEqual([
      `error: ${bad}: rxfleet.incus.identity: unknown placeholder {hostname}: use {name}, {project} or {config.KEY}`,
      '1 error, 0 warnings',
    ]);
  });

  it('prints every problem with its path and exits 1', async () => {
    const config = file('bad.yaml', 'workers: many\ninterval: 10s\nbogus: 1\nhelper: /bin/h\ntoken: 12345678\n');
    const choria = file('bad.cfg', 'discovery_timeout = soon\n');
    const { code, stdout } = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(1);
    expect(stdout.trim().split('\n')).toEqual([
      `warning: ${config}: bogus: unknown key, ignored`,
      `error: ${config}: workers: expected a whole number >= 0 (0 means one per CPU), got "many" (a string)`,
      `error: ${config}: token: expected a string, got a number (value not shown: it is a secret)`,
      `error: ${config}: interval: expected at least 1m (interval is too small; valid example values are 10m or 10h), got "10s"`,
      `error: ${choria}:1 discovery_timeout: expected a whole number of seconds >= 1, got "soon"`,
      '4 errors, 1 warning',
    ]);
    expect(stdout).not.toContain('12345678');
  });

  it('passes with warnings, and fails on them with --strict', async () => {
    const config = file('warn.yaml', `helper: ${MINIMAL_HELPER}\nbroker_port: 4222\nchoria_insecure: true\n`);
    const choria = file('ok.cfg', 'identity = a\nplugin.choria.middleware_hosts = b:4222\n');
    const lenient = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(lenient.code).toBe(0);
    expect(lenient.stdout).toMatch(/^warning: .*broker_port: deprecated/m);
    expect(lenient.stdout).toMatch(/OK with 1 warning/);
    const strict = await rxfleet('validate', '--config', config, '--choria-config', choria, '--strict');
    expect(strict.code).toBe(1);
  });

  it("checks what rxfleet provision needs to connect: the file provider's TLS material unless choria_insecure", async () => {
    const config = file('tls.yaml', `helper: ${MINIMAL_HELPER}\n`);
    const choria = file('tls.cfg', 'identity = a\nplugin.security.provider = file\nplugin.security.file.certificate = /nowhere/cert.pem\n');
    const { code, stdout } = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(1);
    expect(stdout.trim().split('\n')).toEqual([
      `error: ${choria}: plugin.security.file.certificate: file "/nowhere/cert.pem" does not exist`,
      `error: ${choria}: plugin.security.file.key is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure: true)`,
      `error: ${choria}: plugin.security.file.ca is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure: true)`,
      '3 errors, 0 warnings',
    ]);
  });

  it("a Choria configuration without a provider is go-choria's puppet one; without brokers they come from DNS SRV", async () => {
    const config = file('puppet.yaml', `helper: ${MINIMAL_HELPER}\n`);
    const choria = file('puppet.cfg', `identity = a.example.net\nplugin.choria.ssldir = ${dir}/ssl\n`);
    const { code, stdout } = await rxfleetWith({ USER: 'ops' }, 'validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(1);
    expect(stdout.trim().split('\n')).toEqual([
      `error: ${choria}: the puppet security provider needs the certificate "${dir}/ssl/certs/ops.mcollective.pem" (plugin.choria.ssldir ${dir}/ssl, certname ops.mcollective), which does not exist`,
      `error: ${choria}: the puppet security provider needs the private key "${dir}/ssl/private_keys/ops.mcollective.pem" (plugin.choria.ssldir ${dir}/ssl, certname ops.mcollective), which does not exist`,
      `error: ${choria}: the puppet security provider needs the CA "${dir}/ssl/certs/ca.pem" (plugin.choria.ssldir ${dir}/ssl, certname ops.mcollective), which does not exist`,
      '3 errors, 0 warnings',
    ]);
    const insecure = await rxfleet(
      'validate',
      '--config',
      file('insecure.yaml', `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\n`),
      '--choria-config',
      file('srv.cfg', 'identity = a.example.net\nplugin.choria.srv_domain = example.net\n'),
    );
    expect(insecure.code).toBe(0);
    expect(insecure.stdout).toMatch(/identity a.example.net, NATS servers from DNS SRV records in example.net \(else puppet:4222\)$/m);
  });

  it('says so when the configuration file is missing', async () => {
    const missing = join(dir, 'nope.yaml');
    const { code, stdout } = await rxfleet('validate', '--config', missing, '--choria-config', file('c.cfg', 'identity = a\n'));
    expect(code).toBe(1);
    expect(stdout.split('\n')[0]).toBe(`error: ${missing}: file ${missing} not found`);
  });

  it('without --choria-config and none at the default places, refuses as the Go provisioner does, in one line', async () => {
    const { code, stdout } = await rxfleetWith(
      { HOME: '/nonexistent' },
      'validate',
      '--config',
      file('solo.yaml', `helper: ${MINIMAL_HELPER}\n`),
    );
    expect(code).toBe(1);
    expect(stdout.trim().split('\n')).toEqual([
      'error: /etc/puppetlabs/mcollective/client.cfg: no Choria client configuration: none of ~/.choriarc, ~/.mcollective, /etc/choria/client.conf, /usr/local/etc/choria/client.conf or this file exists; pass --choria-config FILE (the Go provisioner does not start without one either)',
      '1 error, 0 warnings',
    ]);
  });

  it("without a client configuration but with rxfleet's own brokers named, checks with go-choria's defaults, warning", async () => {
    // go-choria's defaults: the puppet provider, whose client certname is <USER>.mcollective, in
    // root's Puppet SSL directory (the specs run as root).
    const { code, stdout } = await rxfleetWith(
      { USER: 'ops', MCOLLECTIVE_CERTNAME: undefined, HOME: '/nonexistent' },
      'validate',
      '--config',
      file('solo-brokers.yaml', `helper: ${MINIMAL_HELPER}\nrxfleet:\n  nats_servers: [nats://127.0.0.1:4222]\n`),
    );
    const lines = stdout.trim().split('\n');
    expect(code).toBe(1);
    expect(lines[0]).toMatch(
      /^warning: \/etc\/puppetlabs\/mcollective\/client\.cfg: no Choria client configuration found at the default locations; using go-choria's defaults \(identity \S+\) with the brokers rxfleet\.nats_servers names: pass --choria-config$/,
    );
    const ssl = '/etc/puppetlabs/puppet/ssl';
    const needs = (what: string, file: string): string =>
      `the puppet security provider needs the ${what} "${ssl}/${file}" (plugin.choria.ssldir ${ssl}, certname ops.mcollective), which does not exist`;
    expect(lines.slice(1).map((l) => l.replace(/^error: [^:]+: /, ''))).toEqual([
      needs('certificate', 'certs/ops.mcollective.pem'),
      needs('private key', 'private_keys/ops.mcollective.pem'),
      needs('CA', 'certs/ca.pem'),
      '3 errors, 1 warning',
    ]);
  });

  it('takes the servers and credentials from the flags provision takes', async () => {
    const config = file('flags.yaml', `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\n`);
    const { code, stdout } = await rxfleet(
      'validate',
      '--config',
      config,
      '--choria-config',
      file('id.cfg', 'identity = a\n'),
      '--nats',
      'nats://admin:PASS@broker:4222,broker2:4222',
      '--monitor',
      '127.0.0.1:9999',
    );
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      'security provider file: caller choria=a, TLS off, requests v1, unsigned',
      `${config}: OK: ${availableParallelism()} workers, interval 1m, features none, helper ${MINIMAL_HELPER}, site "", /metrics on 127.0.0.1:9999, no leader election; choria config ${join(dir, 'id.cfg')}: identity a, 2 NATS servers`,
    ]);
    expect(stdout).not.toContain('PASS');
  });

  it('requires --config', async () => {
    const { code, stderr } = await rxfleet('validate');
    expect(code).toBe(1);
    expect(stderr).toMatch(/required option '--config <file>' not specified/);
  });
});

describe('the helper (DECISIONS: a file the Go provisioner starts with, rxfleet starts with, warning)', () => {
  const running: RxfleetProcess[] = [];
  afterEach(() => killAll(running.splice(0)));

  const cases: Array<[string, () => string, RegExp]> = [
    [
      'does not exist',
      () => '/nonexistent/helper --token s3cret',
      /^warning: \S+: helper: \/nonexistent\/helper does not exist: every node will fail until it can be run$/,
    ],
    [
      'is not executable',
      () => file('not-executable.sh', '#!/bin/sh\necho {}\n', 0o644),
      /^warning: \S+: helper: \S+not-executable\.sh is not executable by this user \(uid \d+\): every node will fail until it can be run$/,
    ],
    [
      'is not on PATH',
      () => 'no-such-helper-anywhere',
      /^warning: \S+: helper: no-such-helper-anywhere is not an executable file in any PATH directory of this user: every node will fail until it can be run$/,
    ],
  ];

  it.each(cases)(
    'that %s: validate warns and exits 0 (1 with --strict); provision starts and logs the same line',
    async (_what, helper, line) => {
      const command = helper();
      const config = file(
        `helper-${running.length}-${Date.now()}.yaml`,
        `helper: ${command}\nchoria_insecure: true\nrxfleet: {nats_servers: ["127.0.0.1:1"]}\n`,
      );
      const choria = file('helper.cfg', 'identity = helper.example.net\n');
      const validate = await rxfleet('validate', '--config', config, '--choria-config', choria);
      const warning = validate.stdout.trim().split('\n')[0];
      expect(warning).toMatch(line);
      expect(validate.code).toBe(0);
      expect(validate.stdout).toMatch(/OK with 1 warning/);
      expect(validate.stdout).not.toContain('s3cret');
      expect((await rxfleet('validate', '--config', config, '--choria-config', choria, '--strict')).code).toBe(1);

      // provision starts (and keeps trying the unreachable broker), with the same line at warn.
      const provision = startRxfleet(['provision', '--config', config, '--choria-config', choria], { env: { ...process.env, HOME: dir } });
      running.push(provision);
      const logged = await provision.next((l) => l.level === 40 && typeof l.msg === 'string' && l.msg.includes('helper:'));
      expect(`warning: ${String(logged.msg)}`).toBe(warning);
      await waitFor(() => provision.stdout().includes('connecting to NATS'), 'the daemon to start');
      expect(provision.stdout()).not.toContain('s3cret');
    },
  );
});

describe('validate and provision agree', () => {
  const refusedBy = async (config: string, choria: string): Promise<{ validate: Outcome; provision: Outcome }> => ({
    validate: await rxfleet('validate', '--config', config, '--choria-config', choria),
    provision: await rxfleet('provision', '--config', config, '--choria-config', choria),
  });

  const bad: Array<[string, string, string]> = [
    ['only a helper: the default puppet provider without its certificates', `helper: ${MINIMAL_HELPER}\n`, 'identity = a\n'],
    ['a schema error', 'workers: -1\nhelper: /bin/true\n', 'identity = a\nplugin.choria.middleware_hosts = b:4222\n'],
    [
      'a deny-list pattern that does not compile',
      `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\ncert_deny_list: ["(unclosed"]\n`,
      'identity = a\nplugin.choria.middleware_hosts = b:4222\n',
    ],
    [
      'the choria provider without its files',
      `helper: ${MINIMAL_HELPER}\n`,
      'identity = a\nplugin.choria.middleware_hosts = b:4222\nplugin.security.provider = choria\n',
    ],
    [
      'a nats credentials file that is not there, and a bad Choria line',
      `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\nrxfleet: {nats_credentials: /nowhere/x.creds}\n`,
      'identity = a\nplugin.choria.middleware_hosts = b:4222\ndiscovery_timeout = 0\n',
    ],
    [
      'a pkcs11 security provider without its driver',
      `helper: ${MINIMAL_HELPER}\n`,
      'identity = a\nplugin.choria.middleware_hosts = b:4222\nplugin.security.provider = pkcs11\n',
    ],
  ];

  it.each(bad)('on %s: provision refuses with exactly the lines validate prints, both exit 1', async (_what, yaml, cfg) => {
    const config = file(`agree-${Math.random().toString(36).slice(2)}.yaml`, yaml);
    const choria = file(`agree-${Math.random().toString(36).slice(2)}.cfg`, cfg);
    const { validate, provision } = await refusedBy(config, choria);
    expect(validate.code).toBe(1);
    expect(provision.code).toBe(1);
    const validateLines = validate.stdout.trim().split('\n');
    const provisionLines = provision.stderr.trim().split('\n');
    expect(provisionLines.slice(0, -1)).toEqual(validateLines.slice(0, -1));
    const errors = validateLines.filter((l) => l.startsWith('error: ')).length;
    expect(errors).toBeGreaterThan(0);
    expect(validateLines.at(-1)).toMatch(new RegExp(`^${errors} errors?, \\d+ warnings?$`));
    expect(provisionLines.at(-1)).toBe(`rxfleet provision: not started: ${errors} configuration error${errors === 1 ? '' : 's'}`);
  });

  it('never prints a password written into a server URL, in either command', async () => {
    const config = file(
      'secret.yaml',
      `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\nrxfleet: {nats_servers: ["nats://admin:PASS1@bro ker:4222"]}\n`,
    );
    const choria = file('secret.cfg', 'identity = a\nplugin.choria.middleware_hosts = nats://admin:PASS2@broker:4222\n');
    const { validate, provision } = await refusedBy(config, choria);
    expect(validate.code).toBe(1);
    expect(provision.code).toBe(1);
    for (const text of [validate.stdout, validate.stderr, provision.stdout, provision.stderr]) {
      expect(text).not.toContain('PASS1');
      expect(text).not.toContain('PASS2');
    }
    expect(validate.stdout).toContain('nats://[redacted]@bro ker:4222');
    // In middleware_hosts the credentials are dropped, as go-choria drops them, and said without them.
    expect(validate.stdout).toContain('plugin.choria.middleware_hosts: user:password in a host is dropped, as go-choria drops it');
  });
});
