import { NatsConnection, connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { StreamMissingError, readBucket, readStream } from '../../../streams/records/readStream';
import { useNatsServer } from '../../helpers/nats';

// readStream and readBucket on a real nats-server: one short-lived pull consumer of JetStream's
// own API per read (streams/records/pullRead.ts), as `rxfleet status` and `history` use them.

const server = useNatsServer();

describe('readStream / readBucket on a real nats-server', () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect({ servers: server().url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'READS', subjects: ['reads.>'] });
    const js = jetstream(nc);
    for (let i = 1; i <= 2500; i++) await js.publish(`reads.many.${i % 7}`, `m${i}`);
    for (const [subject, text] of [
      ['reads.few.a', 'a1'],
      ['reads.few.b', 'b1'],
      ['reads.few.a', 'a2'],
    ])
      await js.publish(subject, text);
  });
  afterAll(async () => {
    await nc.close();
  });

  const consumers = async (): Promise<number> => (await (await jetstreamManager(nc)).streams.info('READS')).state.consumer_count;

  it('every message on the subjects, oldest first, with its subject, sequence and stored time; the consumer deleted after', async () => {
    const before = Date.now();
    const messages = await readStream(nc, { stream: 'READS', subject: 'reads.few.>' });
    expect(messages.map((m) => [m.subject, m.text])).toEqual([
      ['reads.few.a', 'a1'],
      ['reads.few.b', 'b1'],
      ['reads.few.a', 'a2'],
    ]);
    expect(messages.map((m) => m.seq)).toEqual([2501, 2502, 2503]);
    for (const m of messages) {
      expect(m.time).toBeGreaterThan(before - 60_000);
      expect(m.time).toBeLessThanOrEqual(Date.now());
      expect(m.operation).toBeUndefined();
    }
    expect(await consumers()).toBe(0);
  });

  it('with last: the newest of each subject only', async () => {
    const messages = await readStream(nc, { stream: 'READS', subject: 'reads.few.>', last: true });
    expect(messages.map((m) => [m.subject, m.text])).toEqual([
      ['reads.few.b', 'b1'],
      ['reads.few.a', 'a2'],
    ]);
  });

  it('more messages than one pull asks for: all of them, in order', async () => {
    const messages = await readStream(nc, { stream: 'READS', subject: 'reads.many.>' });
    expect(messages).toHaveLength(2500);
    expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
    expect(messages[2499].text).toBe('m2500');
    expect(await consumers()).toBe(0);
  });

  it('subjects with nothing stored: an empty read', async () => {
    expect(await readStream(nc, { stream: 'READS', subject: 'reads.none.>' })).toEqual([]);
  });

  it('no such stream: StreamMissingError, from readStream and readBucket alike', async () => {
    await expect(readStream(nc, { stream: 'ABSENT', subject: 'x.>' })).rejects.toBeInstanceOf(StreamMissingError);
    await expect(readBucket(nc, { bucket: 'ABSENT' })).rejects.toBeInstanceOf(StreamMissingError);
  });

  it("any other refusal: an error with JetStream's own words", async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'ONE_READER', subjects: ['one.>'], max_consumers: 1 });
    await jsm.consumers.add('ONE_READER', { durable_name: 'taken' });
    await expect(readStream(nc, { stream: 'ONE_READER', subject: 'one.>' })).rejects.toThrow(
      /^JetStream: maximum consumers limit reached \(ONE_READER\)$/,
    );
  });

  it("a bucket's live keys with their revisions and its max age; a deleted key left out", async () => {
    const kv = await new Kvm(nc).create('READ_BUCKET', { ttl: 60_000 });
    await kv.put('kept', 'one');
    await kv.put('gone', 'two');
    await kv.put('kept', 'three');
    await kv.delete('gone');
    const { entries, ttlMs } = await readBucket(nc, { bucket: 'READ_BUCKET' });
    expect(ttlMs).toBe(60_000);
    expect(entries.map((e) => [e.key, e.value, e.revision])).toEqual([['kept', 'three', 3]]);
  });
});
