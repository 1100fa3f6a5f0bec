import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../streams/natsServerProcess';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER, sampleValue } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// Issue 14 item 8: a broker that refuses the login, or refuses a subscription, never ends either
// daemon. Both keep trying, with backoff, and say so; the provisioner goes on by discovery.
describe('authorization failures: both daemons keep trying', () => {
  const server = useNatsServer({
    jetstream: false,
    config: `authorization: { users: [
      { user: prov, password: prov-pw }
      { user: fenced, password: fenced-pw, permissions: { subscribe: { deny: ["choria.lifecycle.>"] } } }
      { user: fleet, password: fleet-pw }
    ] }`,
  });
  let dir: string;
  const running: RxfleetProcess[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-auth-'));
  });
  afterEach(() => killAll(running.splice(0)));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const status = (port: number, path: string): Promise<number> =>
    fetch(`http://127.0.0.1:${port}${path}`).then(
      (r) => r.status,
      () => 0,
    );
  const provisioner = async (name: string, user: string, password: string): Promise<{ process: RxfleetProcess; port: number }> => {
    const port = await freePort();
    const config = join(dir, `${name}.yaml`);
    writeFileSync(
      config,
      [
        `helper: ${MINIMAL_HELPER}`,
        'token: tok',
        'choria_insecure: true',
        `monitor_port: ${port}`,
        'workers: 4',
        `rxfleet: {nats_servers: ["${server().url}"], nats_user: ${user}, nats_password: ${password}}`,
      ].join('\n'),
    );
    const choria = join(dir, `${name}.cfg`);
    writeFileSync(choria, 'identity = prov.example.net\n');
    const process = startRxfleet(['provision', '--config', config, '--choria-config', choria]);
    running.push(process);
    await waitFor(async () => (await status(port, '/health')) === 200, '/health');
    return { process, port };
  };

  it('provision: a refused login is retried, the daemon stays up and not ready, and never echoes the password', async () => {
    const { process, port } = await provisioner('wrong', 'prov', 'wrong-pw-8811');
    await new Promise((r) => setTimeout(r, 3000));
    expect(process.running()).toBe(true);
    expect(await status(port, '/ready')).toBe(503);
    expect(process.stdout() + process.stderr()).not.toContain('wrong-pw-8811');
  });

  it('provision: a refused lifecycle subscription is an error line and a retry; the fleet is provisioned by discovery', async () => {
    // The fleet first: without startup events the provisioner finds nodes by its discovery at start.
    const simulate = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nats-user',
      'fleet',
      '--nats-password',
      'fleet-pw',
      '--nodes',
      '3',
      '--token',
      'tok',
      '--restart-delay',
      '100ms',
      '--exit-when-provisioned',
      '--json',
      '--report-every',
      '0',
    ]);
    running.push(simulate);
    await simulate.next((l) => l.type === 'ready');
    const { process, port } = await provisioner('fenced', 'fenced', 'fenced-pw');
    await waitFor(
      () => process.lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('the broker refused the lifecycle subscription')),
      'the refusal to be logged',
    );
    expect((await simulate.exited).code).toBe(0);
    expect(await status(port, '/ready')).toBe(200);
    expect(simulate.lines.find((l) => l.type === 'summary')).toMatchObject({ provisioned: 3, duplicates: 0 });
    expect(process.running()).toBe(true);
    const refusals = process.lines.filter(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('the broker refused the lifecycle subscription'),
    );
    expect(refusals.every((l) => l.level === 50)).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(sampleValue(metrics, 'choria_provisioner_provisioned')).toBe(3);
  }, 60_000);

  it('enrich: a refused login is retried, the daemon stays up and not ready, and never echoes the password', async () => {
    const port = await freePort();
    const enrich = startRxfleet(
      [
        'enrich',
        '--incus',
        join(dir, 'no-such-incus.socket'),
        '--nats',
        server().url,
        '--nats-user',
        'prov',
        '--http',
        `127.0.0.1:${port}`,
      ],
      { env: { RXFLEET_NATS_PASSWORD: 'wrong-pw-2299' } },
    );
    running.push(enrich);
    await waitFor(async () => (await status(port, '/health')) === 200, '/health');
    await new Promise((r) => setTimeout(r, 3000));
    expect(enrich.running()).toBe(true);
    expect(await status(port, '/ready')).toBe(503);
    const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { nats: string };
    expect(health.nats).toBe('connecting');
    expect(enrich.stdout() + enrich.stderr()).not.toContain('wrong-pw-2299');
  });
});
