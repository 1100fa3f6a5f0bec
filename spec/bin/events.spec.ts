import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Subject } from 'rxjs';
import { IncusStreamItem } from '../../lib/incus/api';
import { defaultEnricherSettings, parseEnricherConfig } from '../../lib/enricher/config/config';
import { EventPayload } from '../../lib/enricher/output/payload';
import { EnrichDaemon, startEnrichDaemon } from '../../bin/enrich/daemon';
import { NatsServerProcess, startNatsServer } from '../../streams/natsServerProcess';
import { FakeIncus } from '../helpers/FakeIncus';
import { RXFLEET_BIN, RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// `rxfleet events`, the built command, reading what an enricher (in-process, the Incus server
// faked) published to its stream and its state bucket on a real nats-server.

jest.setTimeout(60_000);
const run = promisify(execFile);

async function events(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [RXFLEET_BIN, 'events', ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const lines = (stdout: string): EventPayload[] =>
  stdout
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as EventPayload);

describe('rxfleet events', () => {
  let server: NatsServerProcess;
  let daemon: EnrichDaemon;
  let fake: FakeIncus;
  let incus: Subject<IncusStreamItem>;
  let dir: string;
  const running: RxfleetProcess[] = [];

  const settled = (): Promise<void> =>
    waitFor(() => daemon.status().line === 0 && daemon.status().jetstreamHeld === 0, 'everything published');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-events-'));
    server = await startNatsServer({ jetstream: true });
    fake = new FakeIncus();
    fake.setProject('p2', { 'features.networks': 'false' });
    fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
    fake.createInstance('default', 'web1', { network: 'br0' }).start('default', 'web1', '10.0.0.5');
    fake.createInstance('p2', 'web1', { network: 'br0' }).start('p2', 'web1', '10.0.0.9');
    fake.createInstance('default', 'db1', { network: 'br0' }).start('default', 'db1', '10.0.0.6');
    const { settings: parsed } = parseEnricherConfig({
      outputs: { jetstream: { url: server.url, create: true, stream: 'FLEET' }, state: { create: true, bucket: 'FLEET_STATE' } },
    });
    incus = new Subject<IncusStreamItem>();
    daemon = await startEnrichDaemon(
      defaultEnricherSettings({ storeFile: undefined, http: undefined, readDelay: 0, sweepInterval: 3_600_000, outputs: parsed.outputs }),
      { reader: fake.asPromiseReader(), events$: incus },
    );
    await waitFor(() => daemon.status().role === 'active', 'the enricher to enrich');
    incus.next({ kind: 'connected' });
    await waitFor(() => daemon.ready(), 'ready');
    fake.stop('default', 'web1');
    incus.next(fake.event('instance-stopped', 'default', 'web1'));
    await settled();
    writeFileSync(
      join(dir, 'enricher.yaml'),
      `outputs:\n  jetstream: { url: "${server.url}", stream: FLEET }\n  state: { bucket: FLEET_STATE }\n`,
    );
  });
  afterAll(async () => {
    await killAll(running);
    await daemon?.stop();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints every event the stream holds as JSON lines, in order, with each instance’s sequence', async () => {
    const { code, stdout } = await events('--nats', server.url, '--stream', 'FLEET', '--format', 'json');
    expect(code).toBe(0);
    const printed = lines(stdout).map((p) => `${p.project}/${p.name} ${p.action}#${p.instance_seq}`);
    // The first round reads the three at once: they come in the order their reads landed.
    expect(printed.slice(0, 3).sort()).toEqual([
      'default/db1 instance-updated#1',
      'default/web1 instance-updated#1',
      'p2/web1 instance-updated#1',
    ]);
    expect(printed[3]).toBe('default/web1 instance-stopped#2');
  });

  it('answers "what happened to web1" from the configuration file: --project, --name, --since', async () => {
    const config = join(dir, 'enricher.yaml');
    const web1 = lines(
      (await events('--config', config, '--project', 'default', '--name', 'web1', '--since', '10m', '--format', 'json')).stdout,
    );
    expect(web1.map((p) => p.action)).toEqual(['instance-updated', 'instance-stopped']);
    expect(
      lines((await events('--config', config, '--name', 'web1', '--format', 'json')).stdout)
        .map((p) => `${p.project} ${p.action}`)
        .sort(),
    ).toEqual(['default instance-stopped', 'default instance-updated', 'p2 instance-updated']);
    const later = await events('--config', config, '--since', new Date(Date.now() + 60_000).toISOString(), '--format', 'json');
    expect(later).toMatchObject({ code: 0, stdout: '' });
    expect(await events('--config', config, '--since', 'yesterday')).toMatchObject({
      code: 1,
      stderr: 'rxfleet events: --since: expected a duration such as 10m or a time such as 2026-12-01T08:00:00Z, got "yesterday"\n',
    });
  });

  it('prints the fleet’s current state from the bucket, as a table', async () => {
    const { code, stdout } = await events('--config', join(dir, 'enricher.yaml'), '--state', '--format', 'table');
    expect(code).toBe(0);
    const rows = stdout.trim().split('\n');
    expect(rows[0].split(/\s+/)).toEqual(['PROJECT', 'NAME', 'STATE', 'SEQ', 'LAST', 'SINCE', 'ADDRESSES']);
    expect(rows.slice(1).map((r) => r.split(/\s+/).filter((c) => !c.startsWith('20')))).toEqual([
      ['default', 'db1', 'Running', '1', 'instance-updated', '10.0.0.6'],
      ['default', 'web1', 'Stopped', '2', 'instance-stopped'],
      ['p2', 'web1', 'Running', '1', 'instance-updated', '10.0.0.9'],
    ]);
  });

  it('--follow prints what comes until a signal, then exits 0; with --state, the fleet first', async () => {
    const follow = startRxfleet(['events', '--config', join(dir, 'enricher.yaml'), '--name', 'db1', '--follow', '--format', 'json']);
    const state = startRxfleet(['events', '--config', join(dir, 'enricher.yaml'), '--state', '--follow', '--format', 'json']);
    running.push(follow, state);
    const printed = (p: RxfleetProcess): EventPayload[] => lines(p.stdout());
    await waitFor(() => printed(follow).length === 1 && printed(state).length === 3, 'what is there already');
    fake.stop('default', 'db1');
    incus.next(fake.event('instance-stopped', 'default', 'db1'));
    await waitFor(() => printed(follow).length === 2 && printed(state).length === 4, 'the new event');
    expect(printed(follow).map((p) => `${p.action}#${p.instance_seq}`)).toEqual(['instance-updated#1', 'instance-stopped#2']);
    // The fleet sorted by project and name, then the change.
    expect(printed(state).map((p) => `${p.project}/${p.name}#${p.instance_seq}`)).toEqual([
      'default/db1#1',
      'default/web1#2',
      'p2/web1#1',
      'default/db1#2',
    ]);
    for (const p of [follow, state]) p.child.kill('SIGTERM');
    expect((await follow.exited).code).toBe(0);
    expect((await state.exited).code).toBe(0);
  });

  it('says in one line what is missing, and exits 1', async () => {
    expect(await events('--nats', server.url, '--stream', 'NOPE')).toMatchObject({
      code: 1,
      stderr: 'rxfleet events: no stream NOPE on the server\n',
    });
    expect(await events('--nats', server.url, '--state', '--bucket', 'NOPE')).toMatchObject({
      code: 1,
      stderr: 'rxfleet events: no state bucket NOPE on the server\n',
    });
    expect(await events()).toMatchObject({
      code: 1,
      stderr: 'rxfleet events: no NATS server: give --nats URL (or RXFLEET_NATS_URL), or --config with outputs.jetstream\n',
    });
    expect(await events('--nats', 'nats://127.0.0.1:1', '--connect-timeout', '500ms')).toMatchObject({
      code: 1,
      stderr: 'rxfleet events: cannot reach NATS at nats://127.0.0.1:1 within 500 ms\n',
    });
  });
});
