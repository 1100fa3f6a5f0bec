import { Msg, NatsConnection, NoRespondersError, RequestError, TimeoutError, connect, headers } from '@nats-io/transport-node';
import { MemoryNatsServer, memoryFleetConnection } from '../../../streams/memory/memoryNats';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { waitFor } from '../../helpers/waitFor';

/** Opens client connections to one kind of server; `stop` closes them and the server. */
interface Transport {
  connect(options?: { inboxPrefix?: string }): Promise<NatsConnection>;
  stop(): Promise<void>;
}

async function realTransport(): Promise<Transport> {
  const server: NatsServerProcess = await startNatsServer({ jetstream: false });
  const open: NatsConnection[] = [];
  return {
    async connect(options = {}) {
      const nc = await connect({ servers: server.url, ...options });
      open.push(nc);
      return nc;
    },
    async stop() {
      await Promise.all(open.map((nc) => (nc.isClosed() ? undefined : nc.close())));
      await server.stop();
    },
  };
}

async function memoryTransport(): Promise<Transport> {
  const server = new MemoryNatsServer();
  const open: NatsConnection[] = [];
  return {
    async connect(options = {}) {
      const nc = server.connect(options);
      open.push(nc);
      return nc;
    },
    async stop() {
      await Promise.all(open.map((nc) => (nc.isClosed() ? undefined : nc.close())));
    },
  };
}

/** Collects what a subscription receives. */
function collect(
  nc: NatsConnection,
  subject: string,
  options: { queue?: string; max?: number } = {},
): { msgs: Msg[]; subjects: () => string[] } {
  const msgs: Msg[] = [];
  nc.subscribe(subject, {
    ...options,
    callback: (error, msg) => {
      if (error === null) msgs.push(msg);
    },
  });
  return { msgs, subjects: () => msgs.map((m) => m.subject) };
}

// The same cases against a real nats-server and the in-memory transport: what the demo's fallback
// relies on behaves as NATS does.
describe.each([
  ['a real nats-server', realTransport],
  ['the in-memory transport', memoryTransport],
])('NATS semantics over %s', (_name, start) => {
  let transport: Transport;
  let a: NatsConnection;
  let b: NatsConnection;

  beforeAll(async () => {
    transport = await start();
  });
  afterAll(async () => {
    await transport.stop();
  });
  beforeEach(async () => {
    a = await transport.connect({ inboxPrefix: 'provisioning.reply' });
    b = await transport.connect();
  });
  afterEach(async () => {
    for (const nc of [a, b]) if (!nc.isClosed()) await nc.close();
  });

  it('delivers data and headers to a subscriber on another connection, in publish order', async () => {
    const got = collect(b, 'orders.new');
    await b.flush();
    const h = headers();
    h.set('Nats-Expected-Last-Subject-Sequence', '7');
    for (let i = 0; i < 50; i++) a.publish('orders.new', `order ${i}`, i === 0 ? { headers: h } : {});
    await waitFor(() => got.msgs.length === 50, '50 messages');
    expect(got.msgs.map((m) => m.string())).toEqual(Array.from({ length: 50 }, (_, i) => `order ${i}`));
    expect(got.msgs[0].headers?.get('Nats-Expected-Last-Subject-Sequence')).toBe('7');
    expect(got.msgs[1].headers).toBeUndefined();
  });

  it('matches * to exactly one token and > to one or more trailing tokens', async () => {
    const star = collect(b, 'a.*.c');
    const tail = collect(b, 'a.>');
    const exact = collect(b, 'a.b');
    await b.flush();
    for (const subject of ['a.b.c', 'a.b.c.d', 'a.b', 'a', 'a.x.c', 'b.b.c']) a.publish(subject, subject);
    // Each subscription is waited for on its own: NATS orders messages per subscription, not
    // across them. The round trips then let anything wrongly delivered arrive before the check.
    await waitFor(() => star.msgs.length >= 2 && tail.msgs.length >= 4 && exact.msgs.length >= 1, 'every match');
    await a.flush();
    await b.flush();
    expect(star.subjects()).toEqual(['a.b.c', 'a.x.c']);
    expect(tail.subjects()).toEqual(['a.b.c', 'a.b.c.d', 'a.b', 'a.x.c']);
    expect(exact.subjects()).toEqual(['a.b']);
  });

  it('gives each message to one member of a queue group, and to every plain subscriber', async () => {
    const one = collect(b, 'work', { queue: 'workers' });
    const two = collect(b, 'work', { queue: 'workers' });
    const watcher = collect(b, 'work');
    await b.flush();
    for (let i = 0; i < 40; i++) a.publish('work', String(i));
    await waitFor(() => watcher.msgs.length === 40, 'every message at the watcher');
    await waitFor(() => one.msgs.length + two.msgs.length === 40, 'every message in the group');
    const seen = [...one.msgs, ...two.msgs].map((m) => m.string()).sort((x, y) => Number(x) - Number(y));
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => String(i)));
  });

  it("request/reply: the reply comes back, under the connection's inbox prefix", async () => {
    b.subscribe('echo', {
      callback: (_, msg) => {
        msg.respond(`${msg.string()} from ${msg.reply?.split('.').slice(0, 2).join('.')}`);
      },
    });
    await b.flush();
    const reply = await a.request('echo', 'hello', { timeout: 2000 });
    expect(reply.string()).toBe('hello from provisioning.reply');
  });

  it('a request nobody answers times out; one nobody subscribes to fails at once with no responders', async () => {
    b.subscribe('silent', { callback: () => undefined });
    await b.flush();
    await expect(a.request('silent', 'x', { timeout: 200 })).rejects.toBeInstanceOf(TimeoutError);
    const refused = a.request('nobody.home', 'x', { timeout: 5000 });
    await expect(refused).rejects.toBeInstanceOf(RequestError);
    await expect(refused.catch((e: Error) => e.cause)).resolves.toBeInstanceOf(NoRespondersError);
  });

  it('a publish with a reply subject nobody serves gets the no-responders status (empty, code 503) on the reply subject', async () => {
    const replies = collect(a, 'provisioning.reply.abc.*');
    await a.flush();
    a.publish('provisioning.node.nowhere', 'ping', { reply: 'provisioning.reply.abc.1' });
    await waitFor(() => replies.msgs.length === 1, 'the status message');
    expect(replies.msgs[0].data.length).toBe(0);
    expect(replies.msgs[0].headers?.code).toBe(503);
  });

  it('unsubscribe and max stop delivery and close the subscription', async () => {
    const limitedGot: string[] = [];
    const manualGot: string[] = [];
    const limited = b.subscribe('ticks', { max: 2, callback: (_, m) => void limitedGot.push(m.string()) });
    const manual = b.subscribe('ticks', { callback: (_, m) => void manualGot.push(m.string()) });
    await b.flush();
    a.publish('ticks', '1');
    a.publish('ticks', '2');
    a.publish('ticks', '3');
    // Waited for and checked per subscription: how the two interleave is not NATS's promise.
    await waitFor(() => manualGot.length === 3, 'three ticks at the plain subscription');
    await limited.closed;
    manual.unsubscribe();
    await manual.closed;
    a.publish('ticks', '4');
    await a.flush();
    await b.flush();
    expect(limitedGot).toEqual(['1', '2']);
    expect(manualGot).toEqual(['1', '2', '3']);
    expect([limited.isClosed(), manual.isClosed()]).toEqual([true, true]);
  });

  it('an iterator subscription yields messages and ends when unsubscribed', async () => {
    const sub = b.subscribe('iter');
    await b.flush();
    a.publish('iter', 'x');
    a.publish('iter', 'y');
    const seen: string[] = [];
    for await (const msg of sub) {
      seen.push(msg.string());
      if (seen.length === 2) sub.unsubscribe();
    }
    expect(seen).toEqual(['x', 'y']);
  });

  it('drain delivers what is pending, then closes: closed() resolves and publishing fails', async () => {
    const got = collect(b, 'late');
    await b.flush();
    a.publish('late', 'last words');
    await a.drain();
    await waitFor(() => got.msgs.length === 1, 'the pending message');
    await expect(a.closed()).resolves.toBeUndefined();
    expect(a.isClosed()).toBe(true);
    expect(() => a.publish('late', 'too late')).toThrow();
  });
});

describe('memoryFleetConnection', () => {
  it('is connected until drained, then closed', async () => {
    const nc = new MemoryNatsServer().connect();
    const connection = memoryFleetConnection(nc);
    const states: string[] = [];
    connection.state$.subscribe((s) => states.push(s));
    expect(connection.state).toBe('connected');
    await connection.drain();
    await waitFor(() => states.includes('closed'), 'closed');
    expect(states).toEqual(['connected', 'closed']);
    expect(nc.isClosed()).toBe(true);
  });
});
