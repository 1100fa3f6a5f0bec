import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PauseGate } from '@rxfleet/operators';
import { buildHelperInput } from '../../../lib/provision/helper/helperInput';
import { HelperError, HelperFailure, HelperRunner } from '../../../streams/helper/helperRunner';

const SCRIPT = resolve(__dirname, '../../fixtures/helpers/scripted-helper.mjs');
const input = buildHelperInput({ identity: 'n1.example.net', inventory: { version: '0.29.0', agents: ['rpcutil'] } });

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-helper-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether a process is running (a zombie waiting to be reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/.test(stat);
  } catch {
    return false;
  }
}

/** Waits (bounded) for a killed process to disappear; SIGKILL is asynchronous in the kernel. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 10));
  return !alive(pid);
}

function counting(): { observed: number; errors: number; observeHelper(): void; helperError(): void } {
  return {
    observed: 0,
    errors: 0,
    observeHelper() {
      this.observed++;
    },
    helperError() {
      this.errors++;
    },
  };
}

async function failure(runner: HelperRunner, signal?: AbortSignal): Promise<HelperError> {
  try {
    await runner.run(input, signal);
  } catch (error) {
    expect(error).toBeInstanceOf(HelperError);
    return error as HelperError;
  }
  throw new Error('the helper run did not fail');
}

describe('HelperRunner with real helper processes', () => {
  it('writes the Host JSON on stdin and decodes the configuration from stdout', async () => {
    const metrics = counting();
    const response = await new HelperRunner({ command: `${SCRIPT} ok`, metrics }).run(input);
    expect(response.configuration).toEqual({ identity: 'n1.example.net', 'plugin.choria.server.provision': 'false' });
    expect(JSON.parse(response.msg)).toEqual({
      identity: 'n1.example.net',
      csr: null,
      ed25519_pubkey: null,
      inventory: '{"agents":["rpcutil"],"version":"0.29.0"}',
      jwt: null,
    });
    expect(metrics).toMatchObject({ observed: 1, errors: 0 });
  });

  it('passes arguments split shell-style, without a shell', async () => {
    const response = await new HelperRunner({ command: `${SCRIPT} args "two words" '$HOME' a|b *` }).run(input);
    expect(JSON.parse(response.msg)).toEqual(['two words', '$HOME', 'a|b', '*']);
  });

  it.each<[string, HelperFailure, string | RegExp]>([
    ['bad-json', 'decode', `could not invoke configure helper: cannot decode output from ${SCRIPT} bad-json: `],
    ['empty', 'empty', `could not invoke configure helper: cannot read ${SCRIPT} empty output: zero bytes received`],
    [
      'stderr-exit-3',
      'exit',
      `could not invoke configure helper: could not wait for ${SCRIPT} stderr-exit-3: exit status 3; stderr: "helper: cannot reach the CA at ca.example.net: connection refused"`,
    ],
    ['kill-self', 'exit', `could not invoke configure helper: could not wait for ${SCRIPT} kill-self: signal: SIGTERM`],
  ])("%s fails as %s with upstream's message", async (mode, kind, message) => {
    const metrics = counting();
    const error = await failure(new HelperRunner({ command: `${SCRIPT} ${mode}`, metrics }));
    expect(error.kind).toBe(kind);
    if (typeof message === 'string' && kind !== 'decode') expect(error.message).toBe(message);
    else expect(error.message.startsWith(message as string)).toBe(true);
    expect(metrics).toMatchObject({ observed: 1, errors: 1 });
  });

  it('keeps only the first KiBs of stderr', async () => {
    const error = await failure(new HelperRunner({ command: `${SCRIPT} stderr-flood`, stderrLimitBytes: 1024 }));
    expect(error.kind).toBe('exit');
    expect(error.stderr).toBe('e'.repeat(1024));
  });

  it('kills a helper that runs past the timeout, and its children with it', async () => {
    const pidFile = join(dir, 'sleeper.pid');
    const runner = new HelperRunner({ command: `${SCRIPT} fork-and-sleep ${pidFile}`, timeoutMs: 3000 });
    const error = await failure(runner);
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe(
      `could not invoke configure helper: ${SCRIPT} fork-and-sleep ${pidFile} did not finish within 3s: its process group was killed`,
    );
    const child = Number(readFileSync(pidFile, 'utf8'));
    expect(await gone(child)).toBe(true);
  });

  it('kills a plain sleeper at the timeout', async () => {
    expect((await failure(new HelperRunner({ command: `${SCRIPT} sleep`, timeoutMs: 200 }))).kind).toBe('timeout');
  });

  it('leaves nothing behind when a helper exits and forgets a child', async () => {
    const pidFile = join(dir, 'orphan.pid');
    const response = await new HelperRunner({ command: `${SCRIPT} fork-and-exit ${pidFile}` }).run(input);
    expect(response.configuration.identity).toBe('n1.example.net');
    expect(await gone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('an abort (shutdown) kills the run', async () => {
    const pidFile = join(dir, 'aborted.pid');
    const controller = new AbortController();
    const pending = failure(new HelperRunner({ command: `${SCRIPT} fork-and-sleep ${pidFile}` }), controller.signal);
    for (let i = 0; i < 500 && !existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    const error = await pending;
    expect(error.kind).toBe('aborted');
    expect(await gone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('refuses while paused without starting the helper, still observing helper_time', async () => {
    const marker = join(dir, 'should-not-exist');
    const metrics = counting();
    const gate = new PauseGate(true);
    const runner = new HelperRunner({ command: `/usr/bin/touch ${marker}`, gate, metrics });
    const error = await failure(runner);
    expect(error.kind).toBe('paused');
    expect(error.message).toBe(`could not invoke configure helper: Provisioning is paused, cannot perform /usr/bin/touch ${marker}`);
    expect(existsSync(marker)).toBe(false);
    expect(metrics).toMatchObject({ observed: 1, errors: 1 });
    gate.resume();
    // Now it runs: touch writes nothing, so the run fails for want of output, after creating the file.
    expect((await failure(runner)).kind).toBe('empty');
    expect(existsSync(marker)).toBe(true);
  });

  it.each<[string, HelperFailure, string]>([
    [
      '/nonexistent/helper',
      'start',
      'could not invoke configure helper: cannot start /nonexistent/helper: spawn /nonexistent/helper ENOENT',
    ],
    [
      "/bin/h 'unterminated",
      'command',
      'could not invoke configure helper: cannot parse helper command: Unterminated single-quoted string',
    ],
    ['   ', 'command', 'could not invoke configure helper: cannot parse helper command: empty'],
  ])('%j fails as %s', async (command, kind, message) => {
    const metrics = counting();
    const error = await failure(new HelperRunner({ command, metrics }));
    expect(error.kind).toBe(kind);
    expect(error.message).toBe(message);
    expect(metrics).toMatchObject({ observed: 1, errors: 1 });
  });

  it('copes with a helper that never reads its (large) input', async () => {
    const big = buildHelperInput({ identity: 'n1', inventory: { facts: { blob: 'x'.repeat(1024 * 1024) } } });
    const response = await new HelperRunner({ command: '/usr/bin/printf \'{"msg":"ignored you"}\'' }).run(big);
    expect(response.msg).toBe('ignored you');
  });

  it('runs many helpers at once without mixing them up', async () => {
    const runner = new HelperRunner({ command: `${SCRIPT} ok` });
    const identities = Array.from({ length: 16 }, (_, i) => `node${i}.example.net`);
    const responses = await Promise.all(identities.map((identity) => runner.run(buildHelperInput({ identity }))));
    expect(responses.map((r) => r.configuration.identity)).toEqual(identities);
  });

  // Issue 14 item 7: the stdout cap was per run, so the daemon could hold workers x 16 MiB.
  it('caps the output held across the runs in flight: a run that would pass it is stopped, and the rest is given back', async () => {
    const slowWriter = `/bin/sh -c "for i in 1 2 3; do head -c 1000000 /dev/zero; sleep 0.3; done"`;
    const runner = new HelperRunner({ command: slowWriter, totalOutputBytes: 4_000_000, timeoutMs: 20_000 });
    const errors = await Promise.all([1, 2, 3].map(() => failure(runner)));
    const stopped = errors.filter((e) => e.kind === 'oversize');
    expect(stopped.length).toBeGreaterThanOrEqual(1);
    expect(stopped[0].message).toBe(
      `could not invoke configure helper: ${slowWriter} was stopped: the helpers in flight held more than 4000000 bytes of output between them; its process group was killed`,
    );
    // The others got all they wrote (3 MB of zeros: not a helper response).
    expect(errors.filter((e) => e.kind !== 'oversize').every((e) => e.kind === 'decode')).toBe(true);
    // Everything was given back: one run alone fits again.
    expect((await failure(runner)).kind).toBe('decode');
  }, 30_000);
});
