import { openNatsConnection } from '../../streams/natsConnection';
import { LoginBackoff } from '../../streams/natsLoginBackoff';
import { useNatsServer } from '../helpers/nats';
import { waitFor } from '../helpers/waitFor';

describe('LoginBackoff: the wait between connection attempts', () => {
  it('stays short while the broker cannot be reached, and doubles to 30 s while it refuses the login', () => {
    const backoff = new LoginBackoff({ random: () => 0 });
    // Unreachable: no CONNECT was ever sent.
    expect([backoff.delay(), backoff.delay(), backoff.delay()]).toEqual([250, 250, 250]);
    const refusedWaits: number[] = [];
    for (let i = 0; i < 8; i++) {
      backoff.observer(); // the broker was reached and sent its INFO: a CONNECT went out
      refusedWaits.push(backoff.delay());
      // nats.js asks again while it waits: the same answer until another attempt is made.
      expect(backoff.delay()).toBe(refusedWaits[i]);
    }
    expect(refusedWaits).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(backoff.refused).toBe(8);
    backoff.connected();
    expect([backoff.refused, backoff.delay()]).toEqual([0, 250]);
  });

  it('tells the longest the next wait can be without changing it', () => {
    const backoff = new LoginBackoff({ random: () => 0 });
    expect(backoff.ceilingMs()).toBe(500);
    backoff.observer();
    expect(backoff.ceilingMs()).toBe(1100);
    expect(backoff.delay()).toBe(1000);
    expect(backoff.ceilingMs()).toBe(1100);
    backoff.observer();
    expect(backoff.ceilingMs()).toBe(2200);
  });

  it('jitters the waits upward only, so they never shrink below the schedule', () => {
    const backoff = new LoginBackoff({ random: () => 0.999 });
    expect(backoff.delay()).toBe(499);
    backoff.observer();
    expect(backoff.delay()).toBe(1099);
  });
});

describe('a daemon connection the broker refuses', () => {
  const server = useNatsServer({ jetstream: false, config: 'authorization: { users: [ { user: provisioner, password: right } ] }' });

  it('keeps trying for ever, each refusal waiting longer than the one before, and never gives up', async () => {
    const backoff = new LoginBackoff({ refusedMs: 100 });
    const controller = new AbortController();
    const connecting = openNatsConnection(
      { servers: [server().url], user: 'provisioner', password: 'wrong', signal: controller.signal },
      undefined,
      backoff,
    );
    let settled: string | undefined;
    connecting.then(
      () => (settled = 'connected'),
      (error: Error) => (settled = error.message),
    );
    const started = Date.now();
    await waitFor(() => backoff.refused >= 4, 'four refused logins', 10_000);
    // 0 + 100 + 200 + 400 ms of waits at least: a constant short wait would have made many more.
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(settled).toBeUndefined();
    controller.abort();
    await waitFor(() => settled !== undefined, 'the abandoned connect to settle', 10_000);
    expect(settled).toMatch(/abandoned/);
  });
});
