import { existsSync } from 'node:fs';
import { firstValueFrom, filter, toArray, take } from 'rxjs';
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

  it('retries for ever, waits for the first connect, pings often, and uses the inbox prefix it is given', () => {
    const options = daemonConnectionOptions({ servers: ['b:4222'], inboxPrefix: 'provisioning.reply', user: 'provisioner', password: 's3cret' });
    expect(options).toMatchObject({
      servers: ['nats://b:4222'],
      maxReconnectAttempts: -1,
      waitOnFirstConnect: true,
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
    await waitFor(() => seenReplyTo.length === 1, 'the spy\'s copy of the request');
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
});
