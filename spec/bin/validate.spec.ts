import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';
import { promisify } from 'node:util';

// Runs the built command (`npm test` builds first), as a user would.
const bin = RXFLEET_BIN;
const run = promisify(execFile);

async function rxfleet(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return rxfleetWith({}, ...args);
}

async function rxfleetWith(env: Record<string, string | undefined>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 60_000, env: { ...process.env, HOME: dir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let dir: string;
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-validate-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rxfleet validate', () => {
  it('prints a one-line summary and exits 0 for a good configuration', async () => {
    const config = file('good.yaml', 'workers: 4\ninterval: 5m\nhelper: /usr/local/bin/helper --token s3cret\nsite: TEST\nmonitor_port: 8080\nfeatures: {pki: true}\nchoria_insecure: true\n');
    const choria = file('client.cfg', 'identity = prov1.example.net\nplugin.choria.middleware_hosts = broker:4222\n');
    const { code, stdout } = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      `${config}: OK: 4 workers, interval 5m, features pki, helper /usr/local/bin/helper, site "TEST", /metrics on port 8080, no leader election; choria config ${choria}: identity prov1.example.net, 1 NATS server`,
    ]);
    expect(stdout).not.toContain('s3cret');
  });

  it('prints every problem with its path and exits 1', async () => {
    const config = file('bad.yaml', 'workers: many\ninterval: 10s\nbogus: 1\nhelper: /bin/h\ntoken: 12345678\n');
    const choria = file('bad.cfg', 'discovery_timeout = soon\n');
    const { code, stdout } = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(1);
    const lines = stdout.trim().split('\n');
    expect(lines).toEqual([
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
    const config = file('warn.yaml', 'helper: /bin/h\nbroker_port: 4222\nchoria_insecure: true\n');
    const choria = file('ok.cfg', 'identity = a\nplugin.choria.middleware_hosts = b:4222\n');
    const lenient = await rxfleet('validate', '--config', config, '--choria-config', choria);
    expect(lenient.code).toBe(0);
    expect(lenient.stdout).toMatch(/^warning: .*broker_port: deprecated/m);
    expect(lenient.stdout).toMatch(/OK with 1 warning/);
    const strict = await rxfleet('validate', '--config', config, '--choria-config', choria, '--strict');
    expect(strict.code).toBe(1);
  });

  it('checks what rxfleet provision needs to connect: the file provider\'s TLS material unless choria_insecure', async () => {
    const config = file('tls.yaml', 'helper: /bin/h\n');
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

  it('a Choria configuration without a provider is go-choria\'s puppet one; without brokers they come from DNS SRV', async () => {
    const config = file('puppet.yaml', 'helper: /bin/h\n');
    const choria = file('puppet.cfg', `identity = a.example.net\nplugin.choria.ssldir = ${dir}/ssl\n`);
    const { code, stdout } = await rxfleetWith({ USER: 'ops' }, 'validate', '--config', config, '--choria-config', choria);
    expect(code).toBe(1);
    expect(stdout.trim().split('\n')).toEqual([
      `error: ${choria}: the puppet security provider needs the certificate "${dir}/ssl/certs/ops.mcollective.pem" (plugin.choria.ssldir ${dir}/ssl, certname ops.mcollective), which does not exist`,
      `error: ${choria}: the puppet security provider needs the private key "${dir}/ssl/private_keys/ops.mcollective.pem" (plugin.choria.ssldir ${dir}/ssl, certname ops.mcollective), which does not exist`,
      `error: ${choria}: the puppet security provider needs the CA "${dir}/ssl/certs/ca.pem" (plugin.choria.ssldir ${dir}/ssl, certname ops.mcollective), which does not exist`,
      '3 errors, 0 warnings',
    ]);
    const insecure = await rxfleet('validate', '--config', file('insecure.yaml', 'helper: /bin/h\nchoria_insecure: true\n'), '--choria-config', file('srv.cfg', 'identity = a.example.net\nplugin.choria.srv_domain = example.net\n'));
    expect(insecure.code).toBe(0);
    expect(insecure.stdout).toMatch(/identity a.example.net, NATS servers from DNS SRV records in example.net \(else puppet:4222\)$/m);
  });

  it('says so when the configuration file is missing', async () => {
    const missing = join(dir, 'nope.yaml');
    const { code, stdout } = await rxfleet('validate', '--config', missing, '--choria-config', file('c.cfg', 'identity = a\n'));
    expect(code).toBe(1);
    expect(stdout.split('\n')[0]).toBe(`error: ${missing}: file ${missing} not found`);
  });

  it('without --choria-config and none at the default places, warns and still checks the YAML', async () => {
    const { code, stdout } = await rxfleet('validate', '--config', file('solo.yaml', 'helper: /bin/h\n'));
    // The test's HOME is the empty temp dir; /etc/choria/client.conf does not exist on the test machine.
    expect(code).toBe(0);
    expect(stdout).toMatch(/^warning: .*no Choria client configuration found at the default locations; pass --choria-config$/m);
  });

  it('requires --config', async () => {
    const { code, stderr } = await rxfleet('validate');
    expect(code).toBe(1);
    expect(stderr).toMatch(/required option '--config <file>' not specified/);
  });
});
