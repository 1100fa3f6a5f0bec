import { resolve } from 'node:path';
import { PauseGate } from '@rxfleet/operators';
import { buildHelperInput } from '../../../lib/provision/helper/helperInput';
import { HelperRestartReason } from '../../../lib/provision/metrics/helperPoolMetrics';
import { HelperError } from '../../../streams/helper/helperRunner';
import {
  HelperPoolObserver,
  PersistentHelper,
  PersistentHelperOptions,
  persistentHelperRestartDelay,
} from '../../../streams/helper/persistentHelper';
import { waitFor } from '../../helpers/waitFor';

const SCRIPTED = resolve(__dirname, '../../fixtures/helpers/persistent-scripted-helper.mjs');

/** Records what the pool reports, as the metrics would. */
function observer(): HelperPoolObserver & { runs: number; errors: number; restarts: HelperRestartReason[]; running: number[] } {
  const seen = { runs: 0, errors: 0, restarts: [] as HelperRestartReason[], running: [] as number[] };
  return Object.assign(seen, {
    observeHelper: () => void seen.runs++,
    helperError: () => void seen.errors++,
    helperRestart: (reason: HelperRestartReason) => void seen.restarts.push(reason),
    setHelperProcesses: (n: number) => void seen.running.push(n),
  });
}

const input = (identity: string) => buildHelperInput({ identity, inventory: { version: '0.29.4' } });
/** The process that answered (the fixture puts its pid and the identity in msg). */
const answeredBy = (msg: string): { pid: number; identity: string } => JSON.parse(msg) as { pid: number; identity: string };
/** Whether a process has ended (a killed one stays a zombie for a moment until it is reaped). */
const gone = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};
/** What a run ended with: the answer's identity, or the error's kind and message. */
async function settle(promise: Promise<{ msg: string }>): Promise<{ ok: string } | { kind: string; message: string }> {
  try {
    return { ok: answeredBy((await promise).msg).identity };
  } catch (error) {
    if (!(error instanceof HelperError)) throw error;
    return { kind: error.kind, message: error.message };
  }
}

describe('PersistentHelper, against real helper processes', () => {
  const pools: PersistentHelper[] = [];
  const pool = (options: Partial<PersistentHelperOptions> = {}): PersistentHelper => {
    const made = new PersistentHelper({ command: SCRIPTED, processes: 1, timeoutMs: 5000, restartDelayMs: () => 20, ...options });
    pools.push(made);
    return made;
  };
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
  });

  it('writes the per-node input with an id first, one compact line, and returns the answer for that id', async () => {
    const helper = pool();
    const response = await helper.run(input('echo-n1.example.net'));
    const line = response.msg;
    expect(line).toMatch(
      /^\{"id":"1","identity":"echo-n1\.example\.net","csr":null,"ed25519_pubkey":null,"inventory":"\{\\"version\\":\\"0\.29\.4\\"\}","jwt":null\}$/,
    );
    expect(JSON.parse(line)).toEqual({ id: '1', ...input('echo-n1.example.net') });
  });

  it('matches answers that come back out of order to their requests, and spreads requests over the processes', async () => {
    const helper = pool({ processes: 2 });
    const slow = helper.run(input('slow300-a'));
    const fast = helper.run(input('b'));
    const order: string[] = [];
    const [a, b] = await Promise.all([slow.then((r) => (order.push('a'), r)), fast.then((r) => (order.push('b'), r))]);
    expect(answeredBy(a.msg).identity).toBe('slow300-a');
    expect(answeredBy(b.msg).identity).toBe('b');
    expect(answeredBy(a.msg).pid).not.toBe(answeredBy(b.msg).pid);
    // On one process, a later request overtakes a slow one.
    const single = pool();
    const late = single.run(input('slow300-c'));
    const early = single.run(input('d'));
    const first = await Promise.race([late.then(() => 'c'), early.then(() => 'd')]);
    expect(first).toBe('d');
    expect(answeredBy((await late).msg).identity).toBe('slow300-c');
  });

  it.each([
    ['dies', 'die-x', 'exit', /\(pid \d+\) exited: exit status 3; stderr: "dying on die-x"/],
    ['writes garbage', 'garbage-x', 'protocol', /wrote a line that is not an answer: not JSON/],
    ['answers without an id', 'noid-x', 'protocol', /wrote a line that is not an answer: no string "id"/],
    [
      'answers an id it was never given',
      'unknown-x',
      'protocol',
      /answered request id "never-asked", which it was not asked or had already answered/,
    ],
    ['writes an oversized line', 'oversize-x', 'oversize', /wrote a line longer than 65536 bytes/],
  ])(
    'a helper that %s is restarted; every request in flight on it fails, and the next one is answered by a new process',
    async (_what, identity, kind, message) => {
      const metrics = observer();
      const helper = pool({ metrics, maxLineBytes: 64 * 1024 });
      const before = answeredBy((await helper.run(input('first'))).msg).pid;
      const bystander = settle(helper.run(input('slow2000-bystander')));
      const culprit = settle(helper.run(input(identity)));
      const [c, b] = await Promise.all([culprit, bystander]);
      // The culprit's own request: failed, unless it answered before misbehaving (not in these cases).
      expect(c).toMatchObject({ kind });
      expect((c as { message: string }).message).toMatch(message);
      expect(b).toMatchObject({ kind });
      const after = answeredBy((await helper.run(input('next'))).msg).pid;
      expect(after).not.toBe(before);
      expect(metrics.restarts).toEqual([kind]);
      expect(metrics.runs).toBe(4);
      expect(metrics.errors).toBe(2);
    },
  );

  it('a helper that answers twice: the first answer is delivered once, the second makes it restart', async () => {
    const metrics = observer();
    const helper = pool({ metrics });
    const bystander = settle(helper.run(input('slow2000-bystander')));
    const twice = await settle(helper.run(input('twice-x')));
    expect(twice).toEqual({ ok: 'twice-x' });
    expect(await bystander).toMatchObject({ kind: 'protocol' });
    expect(metrics.restarts).toEqual(['protocol']);
  });

  it('a helper that hangs: the request times out, the process is killed and restarted, the others in flight fail', async () => {
    const metrics = observer();
    const helper = pool({ metrics, timeoutMs: 600 });
    const before = answeredBy((await helper.run(input('first'))).msg).pid;
    const hung = settle(helper.run(input('hang-x')));
    const bystander = settle(helper.run(input('slow5000-bystander')));
    expect(await hung).toMatchObject({
      kind: 'timeout',
      message: expect.stringMatching(/did not answer within 600ms: its process group was killed and the helper restarted$/),
    });
    expect(await bystander).toMatchObject({
      kind: 'timeout',
      message: expect.stringMatching(/did not answer request id "2" within 600ms$/),
    });
    await waitFor(() => gone(before), 'the hung helper to be killed', 5000);
    expect(answeredBy((await helper.run(input('next'))).msg).pid).not.toBe(before);
    expect(metrics.restarts).toEqual(['timeout']);
  });

  it('an answer whose fields do not decode fails that request only; the process carries on', async () => {
    const metrics = observer();
    const helper = pool({ metrics });
    const pid = answeredBy((await helper.run(input('first'))).msg).pid;
    expect(await settle(helper.run(input('badfield-x')))).toEqual({
      kind: 'decode',
      message: expect.stringMatching(
        /cannot decode output from .*: json: cannot unmarshal number into field configuration of type map\[string\]string$/,
      ),
    });
    expect(answeredBy((await helper.run(input('next'))).msg).pid).toBe(pid);
    expect(metrics.restarts).toEqual([]);
  });

  it('restarts a process that keeps failing with a growing backoff, and a request waits for the next process', async () => {
    const failures: number[] = [];
    const metrics = observer();
    const helper = pool({ metrics, command: `${SCRIPTED} exit-at-start`, restartDelayMs: (n) => (failures.push(n), 30) });
    const result = await settle(helper.run(input('a')));
    expect(result).toMatchObject({ kind: 'exit', message: expect.stringMatching(/exit status 4; stderr: "refusing to start"/) });
    await waitFor(() => failures.length >= 4, 'four restarts');
    expect(failures.slice(0, 4)).toEqual([1, 2, 3, 4]);
    expect(persistentHelperRestartDelay(1)).toBe(100);
    expect(persistentHelperRestartDelay(2)).toBe(200);
    expect(persistentHelperRestartDelay(20)).toBe(30_000);
  });

  it('a request made while its only process restarts waits for the new one', async () => {
    const helper = pool({ restartDelayMs: () => 300 });
    await settle(helper.run(input('die-x')));
    expect(helper.running()).toBe(0);
    expect(await settle(helper.run(input('after')))).toEqual({ ok: 'after' });
  });

  it('an executable that cannot be started fails the request at once', async () => {
    const helper = pool({ command: '/nonexistent/helper' });
    const started = Date.now();
    expect(await settle(helper.run(input('a')))).toMatchObject({
      kind: 'start',
      message: expect.stringMatching(/could not be started: spawn \/nonexistent\/helper ENOENT/),
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a closed gate refuses before sending; an aborted request rejects at once and its late answer is dropped quietly', async () => {
    const metrics = observer();
    const gate = new PauseGate(true);
    const helper = pool({ metrics, gate });
    expect(await settle(helper.run(input('a')))).toMatchObject({
      kind: 'paused',
      message: expect.stringMatching(/^could not invoke configure helper: Provisioning is paused, cannot perform /),
    });
    gate.resume();
    const pid = answeredBy((await helper.run(input('first'))).msg).pid;
    const abort = new AbortController();
    const aborted = settle(helper.run(input('slow300-x'), abort.signal));
    abort.abort();
    expect(await aborted).toMatchObject({ kind: 'aborted' });
    await new Promise((r) => setTimeout(r, 500));
    expect(answeredBy((await helper.run(input('next'))).msg).pid).toBe(pid);
    expect(metrics.restarts).toEqual([]);
    expect(metrics.errors).toBe(2);
  });

  it('close() ends the processes through their stdin; kill() kills them and fails what is in flight', async () => {
    const closing = pool({ processes: 2 });
    await Promise.all([closing.run(input('a')), closing.run(input('b'))]);
    await closing.close();
    expect(closing.running()).toBe(0);
    expect(await settle(closing.run(input('c')))).toMatchObject({ kind: 'aborted' });

    const killed = pool();
    const pid = answeredBy((await killed.run(input('a'))).msg).pid;
    const inFlight = settle(killed.run(input('hang-b')));
    killed.kill();
    expect(await inFlight).toMatchObject({ kind: 'aborted' });
    await waitFor(() => gone(pid), 'the killed helper to be gone', 5000);
  });
});
