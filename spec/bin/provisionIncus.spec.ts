import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../streams/natsServerProcess';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER, sampleValue } from '../helpers/provisioner';
import { RXFLEET_BIN as bin, RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';

// `rxfleet provision-incus` as a process, without an Incus server: what it refuses, and how the
// two daemons share one endpoint and one stop. spec/bin/provision/incus.lxd.spec.ts runs it
// against a real LXD daemon and provisions a node its instance sighted.
const run = promisify(execFile);

describe('rxfleet provision-incus', () => {
  const server = useNatsServer({ jetstream: false });
  let dir: string;
  const running: RxfleetProcess[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-provision-incus-'));
  });
  afterEach(() => killAll(running.splice(0)));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const choria = (): string => file('choria.cfg', `identity = prov.example.net\nplugin.choria.middleware_hosts = ${server().url}\n`);

  it("checks both daemons' settings before anything starts and prints every problem of both, then exits 1", async () => {
    const config = file(
      'bad.yaml',
      `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\nworkers: -1\nrxfleet:\n  incus: {identity: "{hostname}"}\n`,
    );
    const enrich = file('enrich.yaml', 'workers: many\nread_timeout: 10\n');
    const result = await run(process.execPath, [
      bin,
      'provision-incus',
      '--config',
      config,
      '--choria-config',
      choria(),
      '--enrich-config',
      enrich,
      '--incus',
      'http://incus.example.net',
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toEqual([
      `error: ${config}: workers: expected a whole number >= 0 (0 means one per CPU), got -1`,
      `error: ${config}: rxfleet.incus.identity: unknown placeholder {hostname}: use {name}, {project} or {config.KEY}`,
      `error: ${enrich}: workers: expected a whole number, got "many" (a string)`,
      expect.stringMatching(new RegExp(`^error: ${enrich}: read_timeout: `)),
      'error: incus: http:// is not served by Incus or LXD: use https:// or a unix socket path',
      'rxfleet provision-incus: not started: 5 configuration errors',
    ]);
  });

  it("runs both on one endpoint: /metrics carries both daemons' series, /ready waits for the enricher, /health describes it; SIGTERM stops both, exit 0", async () => {
    const port = await freePort();
    const config = file('good.yaml', `helper: ${MINIMAL_HELPER}\nchoria_insecure: true\nsite: both\nmonitor_port: ${port}\n`);
    // No Incus server at that socket: the enricher keeps trying, so it is never ready.
    const daemon = startRxfleet([
      'provision-incus',
      '--config',
      config,
      '--choria-config',
      choria(),
      '--incus',
      join(dir, 'no-incus.socket'),
    ]);
    running.push(daemon);
    await daemon.next((l) => l.msg === 'connected to NATS');
    await daemon.next(
      (l) =>
        typeof l.msg === 'string' &&
        l.msg.startsWith(
          'Incus feed: sighting every instance of every project as it comes up with an address, from the enricher in this process',
        ),
    );
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sampleValue(metrics, 'choria_provisioner_incus_discovered', { site: 'both' })).toBe(0);
    expect(sampleValue(metrics, 'enricher_connected')).toBe(0);
    expect(sampleValue(metrics, 'incus_events_connected')).toBe(0);
    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ connection: 'connected', enricher: { connected: false, ready: false, nats: 'off' } });
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(daemon.lines.filter((l) => l.msg === 'stopped' || l.msg === 'rxfleet enrich stopped')).toHaveLength(2);
    expect(daemon.lines.find((l) => l.msg === 'rxfleet enrich running')).toMatchObject({
      daemon: 'enrich',
      name: 'rxfleet-provision-incus',
      inProcess: true,
    });
  });
});
