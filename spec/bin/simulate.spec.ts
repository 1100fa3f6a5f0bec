import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { firstValueFrom } from 'rxjs';
import { PROVISION_RPCS } from '../../lib/choria/agents';
import { broadcastDiscovery } from '../../streams/choria/discovery';
import { ChoriaRpcClient } from '../../streams/choria/rpcClient';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { PROVISIONED_CONFIG, configureInput } from '../helpers/choria';
import { useNatsServer } from '../helpers/nats';

// These run the built command (`npm test` builds first), as a user would.
const bin = join(resolve(__dirname, '../..'), 'dist/bin/rxfleet.js');
const run = promisify(execFile);

async function rxfleet(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A running `rxfleet simulate --json`, its JSON lines as they come, and its exit. */
function simulate(args: string[]): { child: ChildProcess; lines: Record<string, unknown>[]; next(type: string): Promise<Record<string, unknown>>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [bin, 'simulate', '--json', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  const waiting: { type: string; resolve: (line: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as Record<string, unknown>;
    lines.push(line);
    for (const w of waiting.filter((w) => w.type === line.type)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(line);
    }
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return {
    child,
    lines,
    next: (type) => {
      const seen = lines.find((l) => l.type === type);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolveLine) => waiting.push({ type, resolve: resolveLine }));
    },
    exited,
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
    const fleet = simulate(['--nats', server().url, '--nodes', '25', '--name-prefix', 'cli', '--jwt-public-key-out', keyFile, '--report-every', '0']);
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
    const fleet = simulate(['--nats', server().url, '--nodes', '2', '--name-prefix', 'done', '--token', 't', '--restart-delay', '5', '--exit-when-provisioned', '--report-every', '50']);
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
    const fleet = simulate(['--nats', server().url, '--nodes', '1', '--name-prefix', 'trace', '--report-every', '0', '--trace', '--lock-window', '300']);
    await fleet.next('ready');
    const id = 'trace-1.example.net';
    const before = Date.now();
    await firstValueFrom(client.call(PROVISION_RPCS.jwt, id, { token: '' }));
    const other = new ChoriaRpcClient({ nc: connection.nc, identity: 'other-provisioner.example.net' });
    try {
      await expect(firstValueFrom(other.call(PROVISION_RPCS.jwt, id, { token: '' }))).rejects.toMatchObject({ name: 'ProvisioningLockError' });
      await new Promise((r) => setTimeout(r, 400));
      await expect(firstValueFrom(other.call(PROVISION_RPCS.jwt, id, { token: '' }))).resolves.toBeDefined();
    } finally {
      other.close();
    }
    fleet.child.kill('SIGINT');
    expect(await fleet.exited).toBe(0);
    const requests = fleet.lines.filter((l) => l.type === 'request');
    expect(requests.map((r) => [r.identity, r.caller, r.agent, r.action])).toEqual([
      [id, client.callerId, 'choria_provision', 'jwt'],
      [id, other.callerId, 'choria_provision', 'jwt'],
      [id, other.callerId, 'choria_provision', 'jwt'],
    ]);
    expect(requests.every((r) => typeof r.at === 'number' && r.at >= before && r.at <= Date.now())).toBe(true);
    expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', lockRefusals: 1 });
  });

  it('refuses bad arguments with one clear line and a non-zero exit', async () => {
    const cases: [string[], string][] = [
      [['--nodes', '3'], `error: required option '--nats <url>' not specified`],
      [['--nats', 'x', '--nodes', '0'], `error: option '--nodes <n>' argument '0' is invalid. expected a positive whole number, got "0"`],
      [['--nats', 'x', '--nodes', '3', '--failure-rate', '1.5'], `error: option '--failure-rate <f>' argument '1.5' is invalid. expected a number from 0 to 1, got "1.5"`],
      [['--nats', 'x', '--nodes', '3', '--component', 'prov.>'], `error: option '--component <name>' argument 'prov.>' is invalid. invalid lifecycle component: prov.>`],
      [['--nats', 'x', '--nodes', '3', '--lifecycle-format', 'xml'], `error: option '--lifecycle-format <format>' argument 'xml' is invalid. Allowed choices are cloudevents, choria.`],
    ];
    for (const [args, line] of cases) {
      const { code, stderr } = await rxfleet('simulate', ...args);
      expect(code).toBe(1);
      expect(stderr.split('\n')[0]).toBe(line);
    }
  });
});
