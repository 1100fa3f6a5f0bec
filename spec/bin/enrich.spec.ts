import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { freePort } from '../../streams/natsServerProcess';
import { selfSignedCertificate } from '../helpers/certs';
import { DAEMON_KINDS, useTestDaemon, uniqueName } from '../helpers/testDaemon';
import { useNatsServer } from '../helpers/nats';
import { waitFor } from '../helpers/waitFor';
import { NatsRecorder, httpGet, payloadProblems } from './enrich/daemonRig';

// The built `rxfleet enrich` (`npm test` builds first) as a user runs it: refused configurations,
// then a real run against a private LXD daemon over https with a pinned certificate, publishing
// to a real nats-server and to stdout, stopped by SIGTERM.

const bin = RXFLEET_BIN;
const run = promisify(execFile);
const WAIT = 60_000;

async function rxfleet(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('rxfleet enrich: configuration problems', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-cli-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints every problem of the file and the flags, one line each, naming where it came from, and exits 1', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'workers: many\nsweep_interval: 6\noutputs: { nats: { subject_prefix: "a..b" } }\npprof: true\n');
    const { code, stdout, stderr } = await rxfleet(
      'enrich',
      '--config',
      file,
      '--read-timeout',
      '10',
      '--project',
      'a',
      '--project-marker',
      'user.x=1',
      '--http',
      'nowhere',
      '--incus',
      'http://h',
    );
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual([
      'error: --project and --project-marker: give a list of projects or a marker, not both',
      `error: ${file}: workers: expected a whole number, got "many" (a string)`,
      'error: --read-timeout: expected a duration such as 250ms, 10s, 5m or 6h (or 0)',
      `error: ${file}: sweep_interval: expected a duration such as 250ms, 10s, 5m or 6h (or 0)`,
      `error: ${file}: outputs.nats.subject_prefix: expected a string matching ^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$, got "a..b" (a string)`,
      'error: --http: expected [host]:port such as :9153 or 127.0.0.1:9153 ("" for none), got "nowhere"',
      'error: incus: http:// is not served by Incus or LXD: use https:// or a unix socket path',
      'rxfleet enrich: not started: 7 configuration errors',
    ]);
  });

  it('refuses to run with no output, and an https server without its pin, without ever printing the key', async () => {
    const client = await selfSignedCertificate('cli-spec');
    const certFile = join(dir, 'c.crt');
    const keyFile = join(dir, 'c.key');
    writeFileSync(certFile, client.cert);
    writeFileSync(keyFile, client.key, { mode: 0o600 });
    const { code, stderr } = await rxfleet(
      'enrich',
      '--incus',
      'https://127.0.0.1:8443',
      '--client-cert',
      certFile,
      '--client-key',
      keyFile,
      '--workers',
      '0',
    );
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      'error: --workers: expected a number >= 1, got 0',
      'error: no output: publish to NATS (--nats URL, outputs.nats.url), to a JetStream stream (outputs.jetstream) or write JSON lines (--stdout, outputs.stdout: true)',
      'error: incus: https://127.0.0.1:8443: https needs the server certificate pinned (server_cert (--server-cert) or server_fingerprint (--server-fingerprint))',
      'rxfleet enrich: not started: 3 configuration errors',
    ]);
    expect(stderr).not.toContain(client.key.split('\n')[1]);
  });
});

describe.each(DAEMON_KINDS)('rxfleet enrich against a real %s daemon over https', (kind) => {
  const host = useTestDaemon(kind);
  const nats = useNatsServer({ jetstream: false });
  let dir: string;
  let key: string;
  let args: string[];
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-run-'));
    const port = await freePort();
    await host().listenHttps(port);
    const client = await selfSignedCertificate('rxfleet-enrich-spec');
    key = client.key;
    writeFileSync(join(dir, 'client.crt'), client.cert);
    writeFileSync(join(dir, 'client.key'), client.key, { mode: 0o600 });
    await host().trustCertificate(join(dir, 'client.crt'), 'rxfleet-enrich-spec');
    const { X509Certificate } = await import('node:crypto');
    const fingerprint = new X509Certificate(readFileSync(join(host().dir, 'server.crt'))).fingerprint256;
    // The file sets what the flags do not; the flags name the server, the broker and the outputs.
    writeFileSync(join(dir, 'enrich.yaml'), 'projects: [default]\nworkers: 4\noutputs:\n  nats:\n    subject_prefix: fleet.incus\n');
    args = [
      'enrich',
      '--config',
      join(dir, 'enrich.yaml'),
      '--incus',
      `https://127.0.0.1:${port}`,
      '--client-cert',
      join(dir, 'client.crt'),
      '--client-key',
      join(dir, 'client.key'),
      '--server-fingerprint',
      fingerprint,
      '--nats',
      nats().url,
      '--stdout',
      '--monitor',
      '127.0.0.1:0',
      '--data-dir',
      join(dir, 'data'),
      '--debug',
    ];
  }, WAIT);

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child?.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'publishes instance-started with its IPv4 to NATS and stdout alike, serves /ready, and on SIGTERM drains, writes its cold store and exits 0',
    async () => {
      const recorder = await NatsRecorder.start(nats().url, 'fleet.incus.>');
      try {
        const running = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        child = running;
        const stdoutLines: string[] = [];
        const logLines: Array<Record<string, unknown>> = [];
        let stderrText = '';
        let stdoutText = '';
        createInterface({ input: running.stdout! }).on('line', (line) => {
          stdoutText += `${line}\n`;
          stdoutLines.push(line);
        });
        createInterface({ input: running.stderr! }).on('line', (line) => {
          stderrText += `${line}\n`;
          try {
            logLines.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            // not a log line
          }
        });
        const exited = new Promise<number | null>((done) => running.once('exit', (code) => done(code)));

        await waitFor(() => logLines.some((l) => typeof l.port === 'number'), 'the monitor endpoint to listen', WAIT);
        const port = logLines.find((l) => typeof l.port === 'number')?.port as number;
        await waitFor(async () => (await httpGet(port, '/ready')).status === 200, '/ready 200', WAIT);

        const name = uniqueName('cli');
        await host().launch(name);
        const started = await recorder.next((p) => p.action === 'instance-started' && p.name === name, `instance-started ${name}`);
        const ip = await host().waitForIPv4(name);
        expect(started.subject).toBe(`fleet.incus.default.instance.instance-started.${name}`);
        expect(started.payload.instance?.interfaces[0].ipv4).toEqual([ip]);
        expect(payloadProblems(started.payload)).toEqual([]);
        await waitFor(() => stdoutLines.includes(started.text), 'the same JSON line on stdout', WAIT);
        for (const line of stdoutLines) expect(payloadProblems(JSON.parse(line))).toEqual([]);

        running.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(logLines.map((l) => l.msg)).toEqual(
          expect.arrayContaining(['stopping: handing on what the enricher holds', 'rxfleet enrich stopped']),
        );
        expect(statSync(join(dir, 'data', 'enricher-cold-store.json')).mode & 0o777).toBe(0o600);
        const stored = JSON.parse(readFileSync(join(dir, 'data', 'enricher-cold-store.json'), 'utf8')) as {
          projects: Record<string, { instances?: Record<string, unknown> }>;
        };
        expect(Object.keys(stored.projects.default.instances ?? {})).toContain(name);
        // The key's body never reaches the log or the outputs, even at debug level.
        const keyBody = key.split('\n')[1];
        expect(stderrText).not.toContain(keyBody);
        expect(stdoutText).not.toContain(keyBody);
      } finally {
        await recorder.stop();
      }
    },
    3 * WAIT,
  );

  it(
    'with a certificate restricted to a project: warns once about the listing it may not make, reads its networks by name, and announces an instance at once',
    async () => {
      // Incus refuses the listing 500 ("User does not have permissions for project"), LXD 403.
      await host().createProject('p2');
      const restricted = await selfSignedCertificate('rxfleet-restricted-spec');
      writeFileSync(join(dir, 'restricted.crt'), restricted.cert);
      writeFileSync(join(dir, 'restricted.key'), restricted.key, { mode: 0o600 });
      await host().trustCertificate(join(dir, 'restricted.crt'), 'rxfleet-restricted-spec', { projects: ['p2'] });
      const recorder = await NatsRecorder.start(nats().url, 'p2.incus.>');
      const at = (flag: string): string => args[args.indexOf(flag) + 1];
      const running = spawn(
        process.execPath,
        [
          bin,
          'enrich',
          ...['--incus', at('--incus'), '--client-cert', join(dir, 'restricted.crt'), '--client-key', join(dir, 'restricted.key')],
          ...['--server-fingerprint', at('--server-fingerprint'), '--nats', nats().url, '--subject-prefix', 'p2.incus'],
          ...['--sweep-interval', '300ms', '--read-delay', '0', '--monitor', '', '--debug'],
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      child = running;
      const logLines: Array<{ level: number; msg: string }> = [];
      createInterface({ input: running.stdout! }).on('line', (line) => {
        try {
          logLines.push(JSON.parse(line) as { level: number; msg: string });
        } catch {
          // not a log line
        }
      });
      const forbidden = (l: { msg: string }): boolean => l.msg.startsWith('listing networks of default is not allowed to this client');
      try {
        await waitFor(() => logLines.some((l) => l.msg.startsWith('warm')), 'the enricher warm', WAIT);
        const name = uniqueName('rs');
        await host().launch(name, { project: 'p2' });
        const started = await recorder.next((p) => p.action === 'instance-started' && p.name === name, `instance-started ${name}`);
        const ip = await host().waitForIPv4(name, { project: 'p2' });
        // Read by name in the instance's project (GET /1.0/networks/<bridge>?project=p2): placed at once.
        expect(started.payload.status).toBe('ok');
        expect(started.payload.instance?.interfaces).toEqual([
          { name: 'eth0', device: 'eth0', project: 'default', network: host().bridge, managed: true, ipv4: [ip], ipv6: [] },
        ]);
        expect(recorder.messages.filter((m) => m.payload.name === name && m.payload.status !== 'ok')).toEqual([]);
        expect(payloadProblems(started.payload)).toEqual([]);
        // Rounds every 300 ms: several refusals, one warning; the rest at debug.
        await waitFor(() => logLines.filter(forbidden).length >= 3, 'three rounds refused the listing', WAIT);
        expect(logLines.filter((l) => forbidden(l) && l.level >= 40)).toHaveLength(1);
        expect(logLines.filter((l) => l.level >= 40 && l.msg.includes('networks of default'))).toHaveLength(1);
      } finally {
        running.kill('SIGKILL');
        await new Promise((r) => running.once('exit', r));
        await recorder.stop();
      }
    },
    3 * WAIT,
  );
});
