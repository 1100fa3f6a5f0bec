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
    const publisher = new NatsPublisher({ open: (signal) => openNatsConnection({ servers: [server().url], signal }), maxHeld: 10, onResult: (r) => results.push(r) });
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
});
