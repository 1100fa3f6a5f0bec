import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { firstValueFrom } from 'rxjs';
import { PROVISION_RPCS } from '../../lib/choria/agents';
import { broadcastDiscovery } from '../../streams/choria/discovery';
import { ChoriaRpcClient } from '../../streams/choria/rpcClient';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { PROVISIONED_CONFIG, configureInput } from '../helpers/choria';
import { useNatsServer } from '../helpers/nats';
import { RXFLEET_BIN, RxfleetProcess, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';
import { freePort } from '../../streams/natsServerProcess';

// These run the built command (`npm test` builds first), as a user would.
const run = promisify(execFile);
const bin = RXFLEET_BIN;

async function rxfleet(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A running `rxfleet simulate --json`: its report lines as they come, one of a type awaited, its exit code. */
function simulate(args: string[]): {
  child: RxfleetProcess['child'];
  lines: Record<string, unknown>[];
  next(type: string): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
} {
  const fleet = startRxfleet(['simulate', '--json', ...args]);
  return {
    child: fleet.child,
    lines: fleet.lines,
    next: (type) => fleet.next((l) => l.type === type),
    exited: fleet.exited.then((e) => e.code),
  };
}

describe('rxfleet simulate', () => {
  const server = useNatsServer({ jetstream: false });
  let connection: FleetConnection;
  let client: ChoriaRpcClient;
  let dir: string;

  beforeAll(async () => {
    connection = await openNatsConnection({ servers: [server().url], inboxPrefix: 'provisioning.reply' });
    client = new ChoriaRpcClient({ nc: connection.nc, identity: 'spec-provisioner.example.net' });
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-simulate-'));
  });
  afterAll(async () => {
    client.close();
    await connection.drain();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a fleet that discovery finds, writes the JWT key, and on SIGTERM prints a summary and exits 0', async () => {
    const keyFile = join(dir, 'jwt-verify.hex');
    const fleet = simulate([
      '--nats',
      server().url,
      '--nodes',
      '25',
      '--name-prefix',
      'cli',
      '--jwt-public-key-out',
      keyFile,
      '--report-every',
      '0',
    ]);
    const ready = await fleet.next('ready');
    expect(ready).toMatchObject({ nodes: 25, jwt_key_type: 'ed25519' });
    expect(ready.jwt_verify_cert).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(keyFile, 'utf8')).toBe(`${ready.jwt_verify_cert}\n`);

    const found = await firstValueFrom(broadcastDiscovery(client));
    expect(found.sort()).toEqual(Array.from({ length: 25 }, (_, i) => `cli-${i + 1}.example.net`).sort());

    fleet.child.kill('SIGTERM');
    expect(await fleet.exited).toBe(0);
    expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', nodes: 25, booted: 25, provisioning: 25, discoveryReplies: 25 });
  });

  it('exits by itself once every node is provisioned, when asked to', async () => {
    const fleet = simulate([
      '--nats',
      server().url,
      '--nodes',
      '2',
      '--name-prefix',
      'done',
      '--token',
      't',
      '--restart-delay',
      '5ms',
      '--exit-when-provisioned',
      '--report-every',
      '50ms',
    ]);
    await fleet.next('ready');
    for (const id of ['done-1.example.net', 'done-2.example.net']) {
      await firstValueFrom(client.call(PROVISION_RPCS.configure, id, configureInput(PROVISIONED_CONFIG, 't')));
      await firstValueFrom(client.call(PROVISION_RPCS.restart, id, { token: 't', splay: 1 }));
    }
    expect(await fleet.exited).toBe(0);
    expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', provisioned: 2, configured: 2, duplicates: 0 });
  });

  it('reports a duplicate provisioning the moment it happens', async () => {
    const fleet = simulate(['--nats', server().url, '--nodes', '1', '--name-prefix', 'dup', '--report-every', '0']);
    await fleet.next('ready');
    await firstValueFrom(client.call(PROVISION_RPCS.configure, 'dup-1.example.net', configureInput(PROVISIONED_CONFIG)));
    await firstValueFrom(client.call(PROVISION_RPCS.configure, 'dup-1.example.net', configureInput(PROVISIONED_CONFIG)));
    expect(await fleet.next('duplicate')).toEqual({ type: 'duplicate', identity: 'dup-1.example.net' });
    fleet.child.kill('SIGINT');
    expect(await fleet.exited).toBe(0);
    expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', duplicates: 1 });
  });

  it('with --trace, reports each request with its caller, action and time; --lock-window shortens the provisioning lock', async () => {
    const fleet = simulate([
      '--nats',
      server().url,
      '--nodes',
      '1',
      '--name-prefix',
      'trace',
      '--report-every',
      '0',
      '--trace',
      '--lock-window',
      '2s',
    ]);
    await fleet.next('ready');
    const id = 'trace-1.example.net';
    const before = Date.now();
    await firstValueFrom(client.call(PROVISION_RPCS.jwt, id, { token: '' }));
    const other = new ChoriaRpcClient({ nc: connection.nc, identity: 'other-provisioner.example.net' });
    let acceptedAt = 0;
    try {
      await expect(firstValueFrom(other.call(PROVISION_RPCS.jwt, id, { token: '' }))).rejects.toMatchObject({
        name: 'ProvisioningLockError',
      });
      // The other caller asks until the first caller's lock lapses (its refusals do not extend it).
      await waitFor(
        () =>
          firstValueFrom(other.call(PROVISION_RPCS.jwt, id, { token: '' })).then(
            () => ((acceptedAt = Date.now()), true),
            () => false,
          ),
        'the other caller to get the lock',
        10_000,
      );
    } finally {
      other.close();
    }
    fleet.child.kill('SIGINT');
    expect(await fleet.exited).toBe(0);
    const requests = fleet.lines.filter((l) => l.type === 'request');
    expect(requests.map((r) => [r.identity, r.agent, r.action])).toEqual(requests.map(() => [id, 'choria_provision', 'jwt']));
    expect(requests.map((r) => r.caller)).toEqual([client.callerId, ...requests.slice(1).map(() => other.callerId)]);
    expect(requests.every((r) => typeof r.at === 'number' && r.at >= before && r.at <= Date.now())).toBe(true);
    // Refused until the window had passed since the first caller's call, then taken.
    expect(acceptedAt - Number(requests[0].at)).toBeGreaterThanOrEqual(2000);
    const summary = fleet.lines.at(-1);
    expect(summary).toMatchObject({ type: 'summary' });
    expect(summary?.lockRefusals).toBe(requests.length - 2);
  });

  it('logs each failed attempt to reach an unreachable --nats with the reason, and a signal then ends it at once', async () => {
    const port = await freePort();
    const fleet = startRxfleet(['simulate', '--nats', `nats://127.0.0.1:${port}`, '--nodes', '1']);
    await waitFor(() => fleet.stderr().includes('cannot connect to NATS'), 'the failed attempt');
    const line = JSON.parse(
      fleet
        .stderr()
        .split('\n')
        .find((l) => l.includes('cannot connect to NATS')) ?? '{}',
    ) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 40, name: 'rxfleet-simulate', attempt: 1, servers: [`nats://127.0.0.1:${port}`] });
    fleet.child.kill('SIGTERM');
    expect((await fleet.exited).code).toBe(0);
  });

  it('without --nats and without nats-server on PATH, says how to get a server in one line and exits 1', async () => {
    const path = mkdtempSync(join(tmpdir(), 'rxfleet-path-'));
    try {
      const fleet = startRxfleet(['simulate', '--nodes', '1'], { env: { ...process.env, PATH: path } });
      expect((await fleet.exited).code).toBe(1);
      expect(fleet.stderr().trim()).toBe(
        'rxfleet simulate: no --nats given and nats-server is not on PATH to start a private one: install it (apt-get install nats-server) or pass --nats nats://host:4222',
      );
    } finally {
      rmSync(path, { recursive: true, force: true });
    }
  });

  it('refuses bad arguments with one clear line and a non-zero exit', async () => {
    const cases: [string[], string][] = [
      [['--nats', 'x'], `error: required option '--nodes <n>' not specified`],
      [
        ['--nats', 'x', '--nodes', '3', '--latency', '50'],
        `error: option '--latency <duration>' argument '50' is invalid. expected a duration with its unit such as 500ms, 10s or 2m, got "50"`,
      ],
      [['--nats', 'x', '--nodes', '0'], `error: option '--nodes <n>' argument '0' is invalid. expected a positive whole number, got "0"`],
      [
        ['--nats', 'x', '--nodes', '3', '--failure-rate', '1.5'],
        `error: option '--failure-rate <f>' argument '1.5' is invalid. expected a number from 0 to 1, got "1.5"`,
      ],
      [
        ['--nats', 'x', '--nodes', '3', '--component', 'prov.>'],
        `error: option '--component <name>' argument 'prov.>' is invalid. invalid lifecycle component: prov.>`,
      ],
      [
        ['--nats', 'x', '--nodes', '3', '--lifecycle-format', 'xml'],
        `error: option '--lifecycle-format <format>' argument 'xml' is invalid. Allowed choices are cloudevents, choria.`,
      ],
      [
        ['--nats', 'x', '--nodes', '3', '--require-signed'],
        'error: --require-signed needs --ca <file>: the CA that signed requests are verified against',
      ],
    ];
    for (const [args, line] of cases) {
      const { code, stderr } = await rxfleet('simulate', ...args);
      expect(code).toBe(1);
      expect(stderr.split('\n')[0]).toBe(line);
    }
  });
});
