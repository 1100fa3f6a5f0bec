import { Writable } from 'node:stream';
import pino from 'pino';
import { NatsPublisher, PublishResult } from '../../streams/natsPublisher';
import { openNatsConnection } from '../../streams/natsConnection';
import { useNatsServer } from '../helpers/nats';
import { waitFor } from '../helpers/waitFor';

describe('NatsPublisher over a real nats-server', () => {
  // A small max_payload, so that the server's limit is reachable in a spec.
  const server = useNatsServer({ jetstream: false, config: 'max_payload: 1024' });

  it('holds what comes before the connection, sends it first and in order, and counts a message the client refuses without throwing', async () => {
    const subscriber = await openNatsConnection({ servers: [server().url] });
    const received: string[] = [];
    subscriber.nc.subscribe('p.>', { callback: (_e, m) => void received.push(m.string()) });
    await subscriber.nc.flush();
    const results: PublishResult[] = [];
    const publisher = new NatsPublisher({
      open: (signal) => openNatsConnection({ servers: [server().url], signal }),
      maxHeld: 10,
      onResult: (r) => results.push(r),
    });
    try {
      publisher.publish('p.a', 'one');
      publisher.publish('p.a', 'two');
      expect(publisher.heldCount).toBe(2);
      await waitFor(() => publisher.currentState === 'connected', 'connected');
      expect(() => publisher.publish('p.big', 'x'.repeat(4096))).not.toThrow();
      publisher.publish('p.a', 'three');
      await waitFor(() => received.length === 3, 'three messages');
      expect(received).toEqual(['one', 'two', 'three']);
      expect(results).toEqual(['sent', 'sent', 'failed', 'sent']);
    } finally {
      await publisher.close();
      await subscriber.drain();
    }
    expect(publisher.currentState).toBe('closed');
    publisher.publish('p.a', 'late');
    expect(results[results.length - 1]).toBe('dropped');
  });

  it("past the hold, keeps the latest message of each key and sends those first when NATS is back: a subscriber ends with every key's last word", async () => {
    let letConnect: () => void = () => undefined;
    const connectAllowed = new Promise<void>((resolve) => (letConnect = resolve));
    const results: PublishResult[] = [];
    const publisher = new NatsPublisher({
      // Not connected until the spec says: an outage, as the publisher sees it.
      open: async (signal) => {
        await connectAllowed;
        return openNatsConnection({ servers: [server().url], signal });
      },
      maxHeld: 2,
      onResult: (r) => results.push(r),
    });
    const subscriber = await openNatsConnection({ servers: [server().url] });
    const received: string[] = [];
    subscriber.nc.subscribe('p.>', { callback: (_e, m) => void received.push(m.string()) });
    await subscriber.nc.flush();
    try {
      for (const [word, key] of [
        ['a1', 'a'],
        ['b1', 'b'],
        ['a2', 'a'],
        ['c1', 'c'],
        ['a3', 'a'],
        ['b2', 'b'],
        ['x', undefined],
      ] as const) {
        publisher.publish(`p.${word}`, word, key);
      }
      // a1 and a2 were pushed out by a later a, b1 was superseded by b2: dropped. c1 and a3 were
      // pushed out with no later word on their keys: kept as last words beside the hold (b2, x).
      expect(results).toEqual(['dropped', 'dropped', 'dropped']);
      expect(publisher.heldCount).toBe(4);
      letConnect();
      await waitFor(() => received.length === 4, 'four messages');
      expect(received).toEqual(['c1', 'a3', 'b2', 'x']);
      expect(results.filter((r) => r === 'sent')).toHaveLength(4);
      expect(publisher.heldCount).toBe(0);
    } finally {
      await publisher.close();
      await subscriber.drain();
    }
  });

  it('logs the first five refused messages of a minute and then one summary, and counts every one', async () => {
    const lines: { msg: string }[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk, _e, cb) => (lines.push(JSON.parse(String(chunk)) as { msg: string }), cb()) }),
    );
    const results: PublishResult[] = [];
    const publisher = new NatsPublisher({
      open: (signal) => openNatsConnection({ servers: [server().url], signal }),
      maxHeld: 10,
      logger,
      onResult: (r) => results.push(r),
    });
    try {
      await waitFor(() => publisher.currentState === 'connected', 'connected');
      for (let i = 0; i < 50; i++) publisher.publish('p.big', 'x'.repeat(4096));
      expect(results.filter((r) => r === 'failed')).toHaveLength(50);
      expect(lines.filter((l) => l.msg === 'NATS refused a message')).toHaveLength(5);
    } finally {
      await publisher.close();
    }
    // Closing logs the interval's summary at once: one line for the 45 held back.
    expect(lines.filter((l) => /NATS refused a message/.test(l.msg))).toHaveLength(6);
  });
});
