import { jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { parseEnricherConfig } from '../../../lib/enricher/config/config';
import { DurableMessage, PublishLine } from '../../../lib/enricher/jetstream/publishLine';
import { StateLedger } from '../../../lib/enricher/jetstream/stateLedger';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { ensureEventStream, ensureStateBucket } from '../../../streams/jetstream/eventStream';
import { JetStreamPublisher } from '../../../streams/jetstream/jetstreamPublisher';
import { recoverFleet } from '../../../streams/jetstream/recoverFleet';
import { readStateSnapshot } from '../../../streams/jetstream/stateBucket';
import { StateWriter } from '../../../streams/jetstream/stateWriter';
import { waitFor } from '../../helpers/waitFor';

// The JetStream output over a real nats-server: acknowledged in order, held and sent again
// through a server's SIGKILL, a duplicate acknowledgement checked against the stream, the state
// bucket and its watermark kept.

jest.setTimeout(60_000);

function message(name: string, action: string, n: number, size = 0): DurableMessage {
  const payload = {
    version: 1,
    action,
    kind: 'instance',
    project: 'default',
    name,
    status: 'ok',
    origin: 'incus',
    received: new Date(1_700_000_000_000 + n).toISOString(),
    enriched: ['instance', 'interfaces'],
    instance: {
      type: 'container',
      status: 'Running',
      running: true,
      location: 'none',
      profiles: [],
      config: { n: String(n), pad: 'x'.repeat(size) },
      interfaces: [],
      networks: {},
    },
  };
  return {
    subject: `incus.events.default.instance.${action}.${name}`,
    json: JSON.stringify(payload),
    about: { kind: 'instance', project: 'default', name, action, stamp: String(n) },
    record: action !== 'instance-deleted',
  };
}

interface Stored {
  seq: number;
  name: string;
  instanceSeq: number;
  id: string;
}

async function stored(connection: FleetConnection): Promise<Stored[]> {
  const jsm = await jetstreamManager(connection.nc);
  const { first_seq, last_seq } = (await jsm.streams.info('INCUS_EVENTS')).state;
  const out: Stored[] = [];
  for (let seq = Math.max(first_seq, 1); seq <= last_seq; seq++) {
    const m = await jsm.streams.getMessage('INCUS_EVENTS', { seq }).catch(() => null);
    if (m === null) continue;
    const payload = m.json<{ name: string; instance_seq: number }>();
    expect(Number(m.header.get('Rxfleet-Instance-Seq'))).toBe(payload.instance_seq);
    out.push({ seq, name: payload.name, instanceSeq: payload.instance_seq, id: m.header.get('Nats-Msg-Id') });
  }
  return out;
}

describe('the JetStream publisher on a real nats-server', () => {
  let server: NatsServerProcess;
  let connection: FleetConnection;
  let results: string[];
  let retries: string[];
  let publisher: JetStreamPublisher;
  let line: PublishLine;

  const settings = (url: string) =>
    parseEnricherConfig({
      outputs: { jetstream: { url, create: true, ack_timeout: '500ms', max_pending: 32 }, state: { create: true } },
    }).settings.outputs;

  async function open(): Promise<void> {
    const outputs = settings(server.url);
    await ensureEventStream(connection.nc, outputs.jetstream!);
    await ensureStateBucket(connection.nc, outputs.state!);
    const recovered = await recoverFleet({
      nc: connection.nc,
      stream: 'INCUS_EVENTS',
      subjectPrefix: 'incus.events',
      bucket: 'INCUS_STATE',
    });
    results = [];
    retries = [];
    line = new PublishLine({ maxHeld: 10_000, maxPending: 32, seqs: recovered.seqs, streamSeq: recovered.streamSeq });
    const writer = new StateWriter({
      nc: connection.nc,
      bucket: 'INCUS_STATE',
      stream: 'INCUS_EVENTS',
      ledger: new StateLedger(recovered.watermark, recovered.records),
      floor: () => line.floor(),
      timeoutMs: 1000,
    });
    writer.repair(recovered.repairs, recovered.streamSeq);
    publisher = new JetStreamPublisher({
      connection,
      stream: 'INCUS_EVENTS',
      line,
      state: writer,
      ackTimeoutMs: 500,
      retryMs: 50,
      hooks: { onResult: (r) => results.push(r), onRetry: (reason) => retries.push(reason) },
    });
  }

  beforeEach(async () => {
    server = await startNatsServer({ jetstream: true });
    connection = await openNatsConnection({ servers: [server.url], name: 'spec-publisher', reconnectWaitMs: 50 });
    await open();
  });
  afterEach(async () => {
    await connection.drain();
    await server.stop();
  });

  it('sends each event once, in order, with its id and sequence; the bucket holds each instance’s last record and the watermark covers them', async () => {
    for (let n = 1; n <= 30; n++) publisher.publish(message(`c${n % 3}`, 'instance-updated', n));
    publisher.publish(message('c0', 'instance-deleted', 31));
    await publisher.close();
    expect(results).toEqual(Array(31).fill('sent'));
    const messages = await stored(connection);
    expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
    for (const name of ['c0', 'c1', 'c2']) {
      const own = messages.filter((m) => m.name === name);
      expect(own.map((m) => m.instanceSeq)).toEqual(own.map((_, i) => i + 1));
      expect(own.map((m) => m.id)).toEqual(own.map((m) => `instance/default/${name}/${m.instanceSeq}`));
    }
    const snapshot = await readStateSnapshot(connection.nc, 'INCUS_STATE');
    expect(snapshot.watermark).toBe(31);
    expect(snapshot.instances.map((i) => [i.name, i.seq, i.event.instance?.config.n]).sort()).toEqual([
      ['c1', 10, '28'],
      ['c2', 10, '29'],
    ]);
    expect(snapshot.gone).toEqual([{ project: 'default', name: 'c0', seq: 11 }]);
  });

  it('holds through a SIGKILL of the server and sends again: every sequence stored once, in order, per instance', async () => {
    let n = 0;
    const burst = (count: number): void => {
      for (let i = 0; i < count; i++, n++) publisher.publish(message(`c${n % 5}`, 'instance-updated', n, 200));
    };
    burst(200);
    await server.kill();
    burst(100);
    expect(publisher.held).toBeGreaterThan(0);
    await server.restart();
    burst(100);
    await waitFor(() => publisher.held === 0, 'every event acknowledged', 30_000);
    await publisher.close();
    expect(results.filter((r) => r !== 'sent')).toEqual([]);
    // The kill caught publishes in flight: they were sent again.
    expect(retries.length).toBeGreaterThan(0);
    const messages = await stored(connection);
    for (const name of ['c0', 'c1', 'c2', 'c3', 'c4']) {
      const own = messages.filter((m) => m.name === name).map((m) => m.instanceSeq);
      // Within the duplicate window, the restarted server still knows what it stored: nothing twice.
      expect(own).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    }
  });

  it('a duplicate acknowledgement for an event the stream does not hold (nats-server #6415) is sent again under a new id, its sequence kept', async () => {
    // The duplicate window remembers an id whose message is gone: what a publish caught in a
    // stream leader change on 2.9 leaves behind.
    const jsm = await jetstreamManager(connection.nc);
    const h = headers();
    h.set('Nats-Msg-Id', 'instance/default/c1/1');
    await connection.nc.request('incus.events.default.instance.instance-updated.c1', '{}', { headers: h, timeout: 2000 });
    await jsm.streams.deleteMessage('INCUS_EVENTS', 1);
    await open();
    publisher.publish(message('c1', 'instance-started', 1));
    await publisher.close();
    expect(results).toEqual(['sent']);
    const messages = await stored(connection);
    expect(messages).toEqual([{ seq: 2, name: 'c1', instanceSeq: 1, id: 'instance/default/c1/1~1' }]);
  });

  it('starts from what the stream and the bucket hold: a restart continues each instance’s sequence', async () => {
    publisher.publish(message('c1', 'instance-started', 1));
    publisher.publish(message('c1', 'instance-updated', 2));
    await publisher.close();
    await open();
    publisher.publish(message('c1', 'instance-stopped', 3));
    await publisher.close();
    expect((await stored(connection)).map((m) => m.instanceSeq)).toEqual([1, 2, 3]);
  });
});
