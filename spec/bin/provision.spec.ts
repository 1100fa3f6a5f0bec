import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../streams/natsServerProcess';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER, SCRIPTED_HELPER, sampleValue } from '../helpers/provisioner';
import { waitFor } from '../helpers/waitFor';
import { RXFLEET_BIN as bin, RxfleetProcess, startRxfleet } from '../helpers/rxfleetProcess';

// `rxfleet provision` and `rxfleet simulate` as real processes, from the build (`npm test` builds first).
const run = promisify(execFile);
describe('rxfleet provision', () => {
  const server = useNatsServer();
  let dir: string;
  const running: RxfleetProcess[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-provision-'));
  });
  afterEach(async () => {
    for (const r of running.splice(0)) {
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
      await r.exited;
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const choriaConfig = (): string => file('choria.cfg', `identity = prov.example.net\nplugin.choria.middleware_hosts = ${server().url}\n`);

  const refuse = async (command: string, config: string, choria: string): Promise<string[]> => {
    const result = await run(process.execPath, [bin, command, '--config', config, '--choria-config', choria]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(result.code).toBe(1);
    return result.stderr.trim().split('\n');
  };
  /** `error: FILE: key: message` as `error key`. */
  const keys = (lines: string[]): string[] => lines.slice(0, -1).map((l) => l.replace(/^(error|warning): [^:]+: /, '$1 ').split(':')[0]);

  it('refuses a bad configuration with every problem on its own line, and exits 1 (run is an alias)', async () => {
    const config = file(
      'bad.yaml',
      ['workers: -1', 'interval: 30s', 'token: [918273645]', 'features: {pki: true, ed25519: true}', 'monitor_port: http'].join('\n'),
    );
    for (const command of ['provision', 'run']) {
      const lines = await refuse(command, config, choriaConfig());
      // What upstream would start with and fail every node on is a warning, printed beside the errors.
      expect(keys(lines)).toEqual([
        'error workers',
        'error token',
        'error monitor_port',
        'error interval',
        'warning helper',
        'error features',
        'warning jwt_verify_cert',
        'warning jwt_signing_key',
      ]);
      expect(lines.at(-1)).toBe('rxfleet provision: not started: 5 configuration errors');
      expect(lines.join('\n')).not.toContain('918273645');
    }
  });

  it('with a valid provisioner file, refuses a Choria configuration whose security provider lacks its TLS material', async () => {
    const config = file('tls.yaml', `helper: ${MINIMAL_HELPER}\n`);
    const lines = await refuse('provision', config, file('empty.cfg', 'identity = prov.example.net\nplugin.security.provider = file\n'));
    expect(keys(lines)).toEqual([
      'error plugin.security.file.certificate is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure',
      'error plugin.security.file.key is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure',
      'error plugin.security.file.ca is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure',
    ]);
    expect(lines.at(-1)).toBe('rxfleet provision: not started: 3 configuration errors');
  });

  it('provisions a fleet run by rxfleet simulate, serves /metrics, writes and removes its pid file, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const pid = join(dir, 'provisioner.pid');
    const config = file(
      'good.yaml',
      [
        `helper: ${MINIMAL_HELPER}`,
        'token: tok-5647382910',
        'choria_insecure: true',
        'workers: 8',
        `monitor_port: ${port}`,
        'site: proc',
        'rxfleet: {shutdown_grace: 10s}',
      ].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choriaConfig(), '--pid', pid]);
    running.push(provisioner);
    await waitFor(() => existsSync(pid), 'the pid file', 20_000);
    expect(readFileSync(pid, 'utf8').trim()).toBe(String(provisioner.child.pid));
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      '/ready',
    );

    const simulate = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      '12',
      '--token',
      'tok-5647382910',
      '--restart-delay',
      '100ms',
      '--exit-when-provisioned',
      '--json',
      '--report-every',
      '0',
    ]);
    running.push(simulate);
    expect((await simulate.exited).code).toBe(0);
    const summary = simulate
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.type === 'summary');
    expect(summary).toMatchObject({ nodes: 12, provisioned: 12, duplicates: 0 });

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sampleValue(metrics, 'choria_provisioner_provisioned', { site: 'proc' })).toBe(12);
    provisioner.child.kill('SIGTERM');
    expect(await provisioner.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(pid)).toBe(false);
    // JSON log lines (stdout is not a terminal), and the token never in them.
    const logs = provisioner
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string } & Record<string, unknown>);
    expect(logs.some((l) => l.msg === 'Provisioned node-1.example.net')).toBe(true);
    expect(logs.at(-1)?.msg).toBe('stopped');
    // Each thing said once: the signal, the grace period (the configured 10 s), stopped.
    expect(logs.filter((l) => l.msg === 'SIGTERM: stopping (send it again to exit at once)')).toHaveLength(1);
    expect(logs.filter((l) => 'graceMs' in l).map((l) => l.graceMs)).toEqual([10_000]);
    expect(logs.filter((l) => l.msg === 'stopped')).toHaveLength(1);
    // The logger's name is the daemon's on every line; the connection's name has its own key.
    expect(new Set(logs.map((l) => l.name))).toEqual(new Set(['rxfleet-provision']));
    expect(logs.find((l) => l.msg === 'connecting to NATS')).toMatchObject({ connection: 'prov.example.net' });
    expect(provisioner.stdout()).not.toContain('tok-5647382910');
  });

  it("says why it cannot reach the broker (in logrus's text form when asked), and a signal while it is still connecting ends it at once, exit 0", async () => {
    const port = await freePort();
    const config = file(
      'unreachable.yaml',
      [`helper: ${MINIMAL_HELPER}`, 'choria_insecure: true', `rxfleet: {nats_servers: ["127.0.0.1:${port}"]}`].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choriaConfig(), '--log-format', 'logfmt']);
    running.push(provisioner);
    await waitFor(() => provisioner.stdout().includes('level=warning msg="cannot connect to NATS'), 'the failed attempt');
    const lines = provisioner.stdout().trim().split('\n');
    expect(lines.find((l) => l.includes('connecting to NATS'))).toMatch(
      /^time="[^"]+" level=info msg="connecting to NATS" connection=prov\.example\.net name=rxfleet-provision servers=/,
    );
    expect(lines.find((l) => l.includes('cannot connect'))).toMatch(
      new RegExp(
        `^time="[^"]+" level=warning msg="cannot connect to NATS at nats://127\\.0\\.0\\.1:${port}: (connection refused|connect ECONNREFUSED 127\\.0\\.0\\.1:${port}); attempt 1, next try in \\d+ms" attempt=1 `,
      ),
    );
    provisioner.child.kill('SIGTERM');
    expect(await provisioner.exited).toEqual({ code: 0, signal: null });
    // It ends as every stop ends: with `stopped`.
    expect(provisioner.stdout().trim().split('\n').at(-1)).toMatch(/^time="[^"]+" level=info msg=stopped /);
  });

  it('a second signal exits at once, killing the helper in flight', async () => {
    const marker = `marker-${randomUUID()}`;
    const port = await freePort();
    const config = file(
      'slow.yaml',
      [
        `helper: ${SCRIPTED_HELPER} by-identity ${marker}`,
        'choria_insecure: true',
        `monitor_port: ${port}`,
        'rxfleet: {shutdown_grace: 60s, helper_timeout: 60s}',
      ].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choriaConfig()]);
    running.push(provisioner);
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      '/ready',
    );
    const simulate = startRxfleet(['simulate', '--nats', server().url, '--nodes', '1', '--name-prefix', 'slow', '--report-every', '0']);
    running.push(simulate);
    // The helpers (the daemon's supervisor carries none of their arguments).
    const processes = (): string[] =>
      spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter((l) => l.includes(marker) && !l.includes(' ps '));
    await waitFor(() => processes().length === 1, 'the helper to run');

    provisioner.child.kill('SIGTERM');
    await waitFor(() => provisioner.stdout().includes('stopping'), 'the graceful stop to begin');
    provisioner.child.kill('SIGTERM');
    expect((await provisioner.exited).code).toBe(1);
    await waitFor(() => processes().length === 0, 'the helper to be gone', 5000);
    simulate.child.kill('SIGTERM');
    expect((await simulate.exited).code).toBe(0);
  });

  // Issue 14 item 5: helpers ran in their own process group and outlived a daemon killed with
  // SIGKILL, their timeouts no longer enforced by anybody.
  it('kill -9 of the daemon mid-helper leaves no helper running', async () => {
    const marker = `marker-${randomUUID()}`;
    const port = await freePort();
    const config = file(
      'killed.yaml',
      [
        `helper: ${SCRIPTED_HELPER} by-identity ${marker}`,
        'choria_insecure: true',
        `monitor_port: ${port}`,
        'rxfleet: {helper_timeout: 60s}',
      ].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choriaConfig()]);
    running.push(provisioner);
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      '/ready',
    );
    const simulate = startRxfleet(['simulate', '--nats', server().url, '--nodes', '2', '--name-prefix', 'slow', '--report-every', '0']);
    running.push(simulate);
    // The helpers (the daemon's supervisor carries none of their arguments).
    const processes = (): string[] =>
      spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter((l) => l.includes(marker) && !l.includes(' ps '));
    await waitFor(() => processes().length === 2, 'both helpers to run');

    provisioner.child.kill('SIGKILL');
    expect((await provisioner.exited).signal).toBe('SIGKILL');
    await waitFor(() => processes().length === 0, 'the helpers to be gone with the daemon', 5000);
    simulate.child.kill('SIGTERM');
    expect((await simulate.exited).code).toBe(0);
  });
});
