import { existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { firstValueFrom, filter, toArray, take } from 'rxjs';
import { LoginBackoff } from '../../streams/natsLoginBackoff';
import { daemonConnectionOptions, normaliseServer, openNatsConnection } from '../../streams/natsConnection';
import { freePort, startNatsServer } from '../../streams/natsServerProcess';
import { useNatsServer } from '../helpers/nats';
import { waitFor } from '../helpers/waitFor';

describe('the daemon NATS connection', () => {
  const server = useNatsServer();

  it('takes Choria-style host:port as well as URLs', () => {
    expect(normaliseServer('broker.example.net:4222')).toBe('nats://broker.example.net:4222');
    expect(normaliseServer(' nats://b:4222 ')).toBe('nats://b:4222');
    expect(normaliseServer('tls://b:4222')).toBe('tls://b:4222');
  });

  it('retries for ever (the first connect by openNatsConnection itself), pings often, and uses the inbox prefix it is given', () => {
    const options = daemonConnectionOptions({
      servers: ['b:4222'],
      inboxPrefix: 'provisioning.reply',
      user: 'provisioner',
      password: 's3cret',
    });
    expect(options).toMatchObject({
      servers: ['nats://b:4222'],
      maxReconnectAttempts: -1,
      waitOnFirstConnect: false,
      ignoreAuthErrorAbort: true,
      pingInterval: 10_000,
      inboxPrefix: 'provisioning.reply',
      user: 'provisioner',
      pass: 's3cret',
    });
  });

  it('connects, carries request/reply with the inbox prefix, and drains', async () => {
    const connection = await openNatsConnection({ servers: [server().url], inboxPrefix: 'provisioning.reply', name: 'spec' });
    const responder = connection.nc.subscribe('svc.echo', { callback: (_e, m) => void m.respond(m.data) });
    const seenReplyTo: string[] = [];
    const spy = connection.nc.subscribe('svc.echo', { callback: (_e, m) => void seenReplyTo.push(m.reply ?? '') });
    const reply = await connection.nc.request('svc.echo', 'ping', { timeout: 2000 });
    expect(reply.string()).toBe('ping');
    // The spy is another subscription: its copy may come after the reply (no order across subscriptions).
    await waitFor(() => seenReplyTo.length === 1, "the spy's copy of the request");
    expect(seenReplyTo[0]).toMatch(/^provisioning\.reply\./);
    expect(connection.state).toBe('connected');
    responder.unsubscribe();
    spy.unsubscribe();
    await connection.drain();
    expect(connection.nc.isClosed()).toBe(true);
    await connection.drain(); // idempotent
  });

  it('reports disconnected when the server dies and connected again when it is back', async () => {
    const own = await startNatsServer({ jetstream: false });
    try {
      const connection = await openNatsConnection({ servers: [own.url] });
      const states = firstValueFrom(connection.state$.pipe(take(3), toArray()));
      await own.kill();
      await firstValueFrom(connection.state$.pipe(filter((s) => s === 'disconnected')));
      await own.restart();
      expect(await states).toEqual(['connected', 'disconnected', 'connected']);
      await connection.drain();
    } finally {
      await own.stop();
    }
    expect(existsSync(own.dir)).toBe(false);
  });

  it("tells go-choria's connector counters what happens: failed first attempts, the connection, a reconnection, a server error, the close", async () => {
    const port = await freePort();
    const seen: string[] = [];
    const events = {
      initialAttemptFailed: () => seen.push('failed'),
      initiallyConnected: (s: number) => seen.push(s >= 0 ? 'connected' : 'negative'),
      reconnected: () => seen.push('reconnected'),
      error: () => seen.push('error'),
      closed: () => seen.push('closed'),
    };
    const opening = openNatsConnection({
      servers: [`127.0.0.1:${port}`],
      events,
      reconnectWaitMs: 50,
      user: 'u',
      password: 'p',
    });
    await waitFor(() => seen.filter((e) => e === 'failed').length >= 2, 'two failed attempts while nothing listens');
    const own = await startNatsServer({
      jetstream: false,
      port,
      config: 'authorization: { users: [ { user: u, password: p, permissions: { subscribe: { deny: "forbidden.>" } } } ] }',
    });
    try {
      const connection = await opening;
      expect(seen.filter((e) => e !== 'failed')).toEqual(['connected']);
      // A subscription the server refuses: an asynchronous error, as nats.go's ErrorHandler sees it.
      connection.nc.subscribe('forbidden.x');
      await waitFor(() => seen.includes('error'), 'the permissions violation');
      await own.kill();
      await own.restart();
      await waitFor(() => seen.includes('reconnected'), 'the reconnection');
      await connection.drain();
      await waitFor(() => seen.includes('closed'), 'the close');
      expect(seen.filter((e) => e !== 'failed')).toEqual(['connected', 'error', 'reconnected', 'closed']);
    } finally {
      await own.stop();
    }
  });

  it('waits for a first connection until its signal aborts, then rejects and leaves no dial loop', async () => {
    const port = await freePort(); // nothing listens there
    const controller = new AbortController();
    const opening = openNatsConnection({ servers: [`127.0.0.1:${port}`], signal: controller.signal });
    let settled = false;
    opening.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    controller.abort();
    await expect(opening).rejects.toThrow(/abandoned/);
  });

  /** A debug logger whose lines are kept as parsed objects. */
  function capturingLogger(): { logger: pino.Logger; lines: Array<{ level: number; msg: string } & Record<string, unknown>> } {
    const lines: Array<{ level: number; msg: string } & Record<string, unknown>> = [];
    const stream = new Writable({ write: (chunk, _e, cb) => (lines.push(JSON.parse(String(chunk))), cb()) });
    return { logger: pino({ level: 'debug' }, stream), lines };
  }

  it('logs every failed first attempt at warn with the server, the reason and the next try, thinning out, then connected', async () => {
    const port = await freePort(); // nothing listens there yet
    const { logger, lines } = capturingLogger();
    const steady = new LoginBackoff({ baseMs: 100, random: () => 0 });
    const opening = openNatsConnection({ servers: [`nats://admin:PASS@127.0.0.1:${port}`], name: 'spec' }, logger, steady);
    const failures = (): typeof lines => lines.filter((l) => String(l.msg).startsWith('cannot connect to NATS'));
    // The first failure at once, the next once the first gap (1 s) has passed: ten attempts meanwhile.
    await waitFor(() => failures().length >= 2, 'two failure lines');
    const own = await startNatsServer({ jetstream: false, port });
    const connection = await opening;
    try {
      const [first, second] = failures();
      expect(first).toMatchObject({ level: 40, attempt: 1, retryInMs: 100, servers: [`nats://[redacted]@127.0.0.1:${port}`] });
      expect(first.msg).toMatch(
        new RegExp(
          `^cannot connect to NATS at nats://\\[redacted\\]@127\\.0\\.0\\.1:${port}: (connection refused|connect ECONNREFUSED 127\\.0\\.0\\.1:${port}); attempt 1, next try in 100ms$`,
        ),
      );
      // The second line is the first failure a second or more after the first; the attempts in
      // between (about ten, fewer on a loaded machine) are counted in it, not logged.
      const attempt = Number(second.attempt);
      expect(attempt).toBeGreaterThanOrEqual(2);
      const since = attempt > 2 ? ` (${attempt - 1} failed since the last line)` : '';
      expect(second.msg).toMatch(new RegExp(`; attempt ${attempt}${since.replace(/[()]/g, '\\$&')}, next try in 100ms$`));
      expect(lines.map((l) => l.msg)).toContain('connected to NATS');
      expect(JSON.stringify(lines)).not.toContain('PASS');
      // The connection's name is its own key: `name` is the logger's.
      expect(lines[0]).toMatchObject({ msg: 'connecting to NATS', connection: 'spec' });
      expect(lines[0].name).toBeUndefined();
    } finally {
      await connection.drain();
      await own.stop();
    }
  });

  it("logs the connection's life: disconnected, failed reconnect attempts, reconnected", async () => {
    const own = await startNatsServer({ jetstream: false });
    const { logger, lines } = capturingLogger();
    const connection = await openNatsConnection({ servers: [own.url] }, logger, new LoginBackoff({ baseMs: 100, random: () => 0 }));
    try {
      await own.kill();
      await waitFor(() => lines.some((l) => String(l.msg).startsWith('cannot reconnect to NATS')), 'a failed reconnect attempt');
      await own.restart();
      await waitFor(() => lines.some((l) => String(l.msg).startsWith('reconnected to NATS')), 'the reconnection');
      const messages = lines.map((l) => String(l.msg));
      const disconnected = messages.findIndex((m) => m.startsWith('disconnected from NATS'));
      const failed = messages.findIndex((m) => m.startsWith('cannot reconnect to NATS'));
      const reconnected = messages.findIndex((m) => m.startsWith('reconnected to NATS'));
      expect(disconnected).toBeGreaterThan(-1);
      expect(failed).toBeGreaterThan(disconnected);
      expect(reconnected).toBeGreaterThan(failed);
      expect(lines[disconnected].level).toBe(40);
      expect(lines[failed]).toMatchObject({ level: 40, attempt: 1 });
      expect(messages[failed]).toBe(`cannot reconnect to NATS at ${own.url}: attempt 1 failed, next try within 200ms`);
    } finally {
      await connection.drain();
      await own.stop();
    }
  });
});
