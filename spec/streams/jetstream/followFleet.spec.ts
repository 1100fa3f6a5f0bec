import { Subscription, filter, firstValueFrom } from 'rxjs';
import { FleetUpdate, followFleet } from 'rxfleet';
import { parseEnricherConfig } from '../../../lib/enricher/config/config';
import { DurableMessage, PublishLine } from '../../../lib/enricher/jetstream/publishLine';
import { StateLedger } from '../../../lib/enricher/jetstream/stateLedger';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { ensureEventStream, ensureStateBucket } from '../../../streams/jetstream/eventStream';
import { JetStreamPublisher } from '../../../streams/jetstream/jetstreamPublisher';
import { StateWriter } from '../../../streams/jetstream/stateWriter';
import { waitFor } from '../../helpers/waitFor';

// followFleet over a real nats-server, imported from the package's main entry as a consumer
// would: the bucket read whole, then the stream followed from its watermark. Consumers that start
// at any moment while the enricher's output publishes, and one that follows through a server
// restart, all end with the fleet as it is, having seen every change once and missed none.

jest.setTimeout(60_000);

const INSTANCES = 8;

function message(name: string, n: number): DurableMessage {
  const deleted = n % 7 === 0;
  const action = deleted ? 'instance-deleted' : 'instance-updated';
  const payload = {
    version: 1,
    action,
    kind: 'instance',
    project: 'default',
    name,
    status: 'ok',
    origin: 'incus',
    received: new Date(1_700_000_000_000 + n).toISOString(),
    enriched: deleted ? [] : ['instance'],
    ...(deleted
      ? {}
      : {
          instance: {
            type: 'container',
            status: 'Running',
            running: true,
            location: 'none',
            profiles: [],
            config: { n: String(n) },
            interfaces: [],
            networks: {},
          },
        }),
  };
  return {
    subject: `incus.events.default.instance.${action}.${name}`,
    json: JSON.stringify(payload),
    about: { kind: 'instance', project: 'default', name, action, stamp: String(n) },
    record: !deleted,
  };
}

/** A consumer: the fleet it holds (name -> config n), the changes it saw, what it was told it missed. */
class Consumer {
  readonly fleet = new Map<string, string>();
  readonly seen = new Map<string, number[]>();
  missed = 0;
  started = false;
  readonly subscription: Subscription;

  constructor(connection: FleetConnection) {
    this.subscription = followFleet({ nc: connection.nc }).subscribe((update: FleetUpdate) => {
      if (update.kind === 'state') {
        this.started = true;
        for (const [, i] of update.instances) this.fleet.set(i.name, i.event.instance?.config.n ?? '');
        return;
      }
      this.missed += update.missed;
      const name = update.event.name;
      this.seen.set(name, [...(this.seen.get(name) ?? []), update.event.instance_seq ?? 0]);
      if (update.instance === undefined) this.fleet.delete(name);
      else this.fleet.set(name, update.instance.event.instance?.config.n ?? '');
    });
  }
}

describe('followFleet on a real nats-server', () => {
  let server: NatsServerProcess;
  let connection: FleetConnection;
  let publisher: JetStreamPublisher;
  const truth = new Map<string, string>();
  let n = 0;

  beforeEach(async () => {
    server = await startNatsServer({ jetstream: true });
    connection = await openNatsConnection({ servers: [server.url], name: 'spec-follow', reconnectWaitMs: 50 });
    const outputs = parseEnricherConfig({ outputs: { jetstream: { url: server.url, create: true }, state: { create: true } } }).settings
      .outputs;
    await ensureEventStream(connection.nc, outputs.jetstream!);
    await ensureStateBucket(connection.nc, outputs.state!);
    const line = new PublishLine({ maxHeld: 10_000, maxPending: 16 });
    const writer = new StateWriter({
      nc: connection.nc,
      bucket: 'INCUS_STATE',
      stream: 'INCUS_EVENTS',
      ledger: new StateLedger(),
      floor: () => line.floor(),
      timeoutMs: 2000,
      watermarkEveryMs: 20,
    });
    publisher = new JetStreamPublisher({ connection, stream: 'INCUS_EVENTS', line, state: writer, ackTimeoutMs: 1000, retryMs: 50 });
    truth.clear();
    n = 0;
  });
  afterEach(async () => {
    await connection.drain();
    await server.stop();
  });

  const publish = (count: number): void => {
    for (let i = 0; i < count; i++) {
      n++;
      const name = `c${n % INSTANCES}`;
      const m = message(name, n);
      publisher.publish(m);
      if (m.record) truth.set(name, String(n));
      else truth.delete(name);
    }
  };
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  it('consumers starting at any moment during a burst end with the fleet as it is, every change once, nothing missed', async () => {
    const consumers: Consumer[] = [];
    for (let round = 0; round < 6; round++) {
      publish(150);
      // Starting while the bucket and the watermark trail the stream.
      consumers.push(new Consumer(connection));
      await sleep(round * 7);
    }
    await waitFor(() => publisher.held === 0, 'every event acknowledged');
    await publisher.close();
    for (const consumer of consumers) {
      await waitFor(
        () => consumer.started && [...truth].every(([k, v]) => consumer.fleet.get(k) === v) && consumer.fleet.size === truth.size,
        'the consumer to hold the fleet',
      );
      consumer.subscription.unsubscribe();
      expect(consumer.missed).toBe(0);
      for (const seqs of consumer.seen.values()) expect(new Set(seqs).size).toBe(seqs.length);
    }
  });

  it('follows through a SIGKILL of the server: nothing repeated, nothing missed', async () => {
    publish(40);
    const consumer = new Consumer(connection);
    await waitFor(() => consumer.started, 'the state');
    await server.kill();
    publish(40);
    await server.restart();
    publish(40);
    await waitFor(() => publisher.held === 0, 'every event acknowledged', 30_000);
    await waitFor(
      () => [...truth].every(([k, v]) => consumer.fleet.get(k) === v) && consumer.fleet.size === truth.size,
      'the consumer to hold the fleet',
      30_000,
    );
    consumer.subscription.unsubscribe();
    expect(consumer.missed).toBe(0);
    for (const seqs of consumer.seen.values())
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b).filter((s, i, all) => all.indexOf(s) === i));
    await publisher.close();
  });

  it('errors when the bucket is not there', async () => {
    await expect(
      firstValueFrom(followFleet({ nc: connection.nc, bucket: 'NO_SUCH' }).pipe(filter((u) => u.kind === 'state'))),
    ).rejects.toThrow(/not found/);
  });
});
