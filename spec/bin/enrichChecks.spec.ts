import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RXFLEET_BIN, RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// The enricher's configuration checked as the provisioner's is (issue 23 item 5), through the
// built command as a user runs it: `rxfleet validate --enrich-config FILE` in the provisioner's
// words (`error: FILE: key: ...`, a misspelt key named with the one it likely is), `rxfleet
// enrich` refusing in the same words, and `--monitor ''` / `RXFLEET_MONITOR=` turning the monitor
// endpoint off, as on provision-incus.

const run = promisify(execFile);

async function rxfleet(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [RXFLEET_BIN, ...args], { timeout: 30_000, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let dir: string;
const running: RxfleetProcess[] = [];
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-checks-'))));
afterEach(() => killAll(running.splice(0)));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("rxfleet validate --enrich-config: the enricher's file, in the provisioner's words", () => {
  it('prints each problem as error: FILE: key: ..., a misspelt key as a warning naming the key it likely is, and exits 1', async () => {
    const bad = file('bad.yaml', 'workerz: 4\nworkers: many\nread_timeout: soon\noutputs: {nats: {password: hunter2, max_held: "x"}}\n');
    const { code, stdout } = await rxfleet({}, 'validate', '--enrich-config', bad);
    expect(code).toBe(1);
    expect(stdout.trim().split('\n')).toEqual([
      `error: ${bad}: workers: expected a whole number, got "many" (a string)`,
      `error: ${bad}: read_timeout: expected a duration such as 250ms, 10s, 5m or 6h (or 0)`,
      `error: ${bad}: outputs.nats.max_held: expected a whole number, got "x" (a string)`,
      '3 errors, 0 warnings',
    ]);
    expect(stdout).not.toContain('hunter2');
  });

  it('passes a usable file with a one-line summary (exit 0); its warnings fail it only with --strict', async () => {
    const good = file('good.yaml', 'workerz: 4\nworkers: 8\noutputs: {stdout: true}\nhttp: "127.0.0.1:9999"\n');
    const passed = await rxfleet({}, 'validate', '--enrich-config', good);
    expect(passed.code).toBe(0);
    expect(passed.stdout.trim().split('\n')).toEqual([
      `warning: ${good}: workerz: unknown key, ignored (did you mean workers?)`,
      `${good}: OK with 1 warning: 8 workers, every project, every instance, server the local socket, outputs stdout, /metrics on 127.0.0.1:9999, no cold store`,
    ]);
    const strict = await rxfleet({}, 'validate', '--enrich-config', good, '--strict');
    expect(strict.code).toBe(1);
    expect(strict.stdout.trim().split('\n').at(-1)).toBe('0 errors, 1 warning');
  });

  it('prints what the JetStream output, the state bucket and the standby will check and make at start; refuses them when they cannot work together', async () => {
    const durable = file(
      'durable.yaml',
      [
        'outputs:',
        '  jetstream: { url: "nats://enricher:s3cret@127.0.0.1:4222", create: true, replicas: 3, max_age: 24h, max_bytes: 512MiB, duplicate_window: 5m }',
        '  state: { create: true, replicas: 3 }',
        'standby: { identity: enrich-a, create: true, ttl: 15s, replicas: 3 }',
      ].join('\n'),
    );
    const passed = await rxfleet({}, 'validate', '--enrich-config', durable);
    expect(passed.code).toBe(0);
    expect(passed.stdout.trim().split('\n')).toEqual([
      `${durable}: OK: 16 workers, every project, every instance, server the local socket, outputs JetStream (1 server, incus.events.*)+state bucket, /metrics on :9153, no cold store`,
      `${durable}: JetStream stream INCUS_EVENTS capturing incus.events.> (created if missing with 3 replicas, max age 24h0m0s, max bytes 512 MiB, duplicate window 5m0s); each event held until acknowledged (5s per try, 256 at once, 10000 waiting)`,
      `${durable}: state bucket INCUS_STATE, key <project>.<name> (created if missing with 3 replicas)`,
      `${durable}: standby: campaigns for RXFLEET_ENRICHER_ELECTION/enricher as enrich-a (bucket created if missing with TTL 15s, 3 replicas)`,
    ]);
    expect(passed.stdout).not.toContain('s3cret');
    const apart = file(
      'apart.yaml',
      'outputs:\n  nats: { url: "nats://127.0.0.1:4222" }\n  jetstream: { duplicate_window: 2h, max_age: 1h }\nstandby: {}\n',
    );
    const refused = await rxfleet({}, 'validate', '--enrich-config', apart);
    expect(refused.code).toBe(1);
    expect(refused.stdout.trim().split('\n')).toEqual([
      `error: ${apart}: outputs.jetstream.subject_prefix: incus.events overlaps outputs.nats.subject_prefix incus.events: the stream would keep each event twice, and a JetStream publish reaches core subscribers anyway; give them different prefixes or drop outputs.nats`,
      `error: ${apart}: outputs.jetstream.duplicate_window: must not be longer than max_age`,
      `error: ${apart}: standby: needs outputs.state (the standby is kept warm from the state bucket)`,
      '3 errors, 0 warnings',
    ]);
  });

  it('needs one file or the other', async () => {
    const { code, stderr } = await rxfleet({}, 'validate');
    expect(code).toBe(1);
    expect(stderr).toContain("error: required option '--config <file>' not specified (or --enrich-config <file> for the enricher's file)");
  });
});

describe('rxfleet enrich: the same words, and the monitor turned off as provision-incus turns it off', () => {
  it('refuses a bad file with error: lines and the count, as provision-incus does', async () => {
    const bad = file('refused.yaml', 'workers: many\n');
    const { code, stderr } = await rxfleet({}, 'enrich', '--config', bad, '--stdout');
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      `error: ${bad}: workers: expected a whole number, got "many" (a string)`,
      'rxfleet enrich: not started: 1 configuration error',
    ]);
  });

  it.each([
    { how: "--monitor ''", args: ['--monitor', ''], env: {} },
    { how: 'RXFLEET_MONITOR=', args: [], env: { RXFLEET_MONITOR: '' } },
  ])('$how runs with no monitor endpoint', async ({ args, env }) => {
    // No server at that socket: the enricher keeps trying, which is enough to see it run.
    const enrich = startRxfleet(['enrich', '--stdout', '--incus', join(dir, 'no.sock'), ...args], { env: { ...process.env, ...env } });
    running.push(enrich);
    await waitFor(() => enrich.stderr().includes('"msg":"rxfleet enrich running"'), 'the enricher running', 20_000);
    const started =
      enrich
        .stderr()
        .split('\n')
        .find((l) => l.includes('"msg":"rxfleet enrich running"')) ?? '';
    // With an endpoint the line names its port (`http`); without, it has none.
    expect(JSON.parse(started)).not.toHaveProperty('http');
    expect(enrich.stderr()).not.toContain('--monitor');
  });
});
