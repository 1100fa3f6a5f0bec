import { NatsConnection, connect } from '@nats-io/transport-node';
import { ObservableInput, from, lastValueFrom } from 'rxjs';
import { ElectionStore } from '../../../lib/election/ElectionStore';
import { MemoryElectionBucket } from '../../../streams/memory/memoryElectionStore';
import { createElectionBucket } from '../../../streams/election/electionBucket';
import { natsElectionStore } from '../../../streams/election/natsElectionStore';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { waitFor } from '../../helpers/waitFor';

const TTL_MS = 1000;
const value = (input: ObservableInput<number>): Promise<number> => lastValueFrom(from(input));

/** Makes a store for a key no other test uses. */
interface Buckets {
  store(key: string): ElectionStore;
  stop(): Promise<void>;
}

async function natsBuckets(): Promise<Buckets> {
  const server: NatsServerProcess = await startNatsServer();
  const nc: NatsConnection = await connect({ servers: server.url });
  // As the demo does on a plain JetStream server: the bucket a Choria broker would make.
  await createElectionBucket(nc, { ttlMs: TTL_MS });
  return {
    store: (key) => natsElectionStore({ nc, apiPrefix: '$JS.API', key }),
    async stop() {
      await nc.close();
      await server.stop();
    },
  };
}

async function memoryBuckets(): Promise<Buckets> {
  return { store: () => new MemoryElectionBucket({ ttlMs: TTL_MS }).store(), stop: async () => undefined };
}

// The demo's in-process election relies on the memory bucket refusing and expiring as JetStream does.
describe.each([
  ['JetStream on a real nats-server', natsBuckets],
  ['the in-memory bucket', memoryBuckets],
])('the election store over %s', (_name, make) => {
  let buckets: Buckets;
  beforeAll(async () => {
    buckets = await make();
  });
  afterAll(async () => {
    await buckets.stop();
  });

  it('reports the bucket TTL', async () => {
    expect(await value(buckets.store('ttl').ttl())).toBe(TTL_MS);
  });

  it('create succeeds once; a second create and an update from a stale sequence are refused; the holder updates', async () => {
    const store = buckets.store('cas');
    const first = await value(store.create('a'));
    await expect(value(store.create('b'))).rejects.toMatchObject({ errCode: 10071 });
    const second = await value(store.update('a', first));
    expect(second).toBeGreaterThan(first);
    await expect(value(store.update('b', first))).rejects.toMatchObject({ errCode: 10071 });
    expect(await value(store.update('a', second))).toBeGreaterThan(second);
  });

  it("once the TTL has passed without a refresh the key is free: create succeeds, the old holder's update is refused", async () => {
    const store = buckets.store('expiry');
    const heldFrom = Date.now();
    const held = await value(store.create('old-leader'));
    // The key is held for at least the TTL; when the server then removes it is its own business.
    let taken = 0;
    let takenAt = 0;
    await waitFor(
      () =>
        value(store.create('new-leader')).then(
          (sequence) => ((taken = sequence), (takenAt = Date.now()), true),
          () => false,
        ),
      'the key to be free',
      10 * TTL_MS,
    );
    expect(takenAt - heldFrom).toBeGreaterThanOrEqual(TTL_MS);
    expect(taken).toBeGreaterThan(held);
    await expect(value(store.update('old-leader', held))).rejects.toMatchObject({ errCode: 10071 });
  });
});

describe('MemoryElectionBucket', () => {
  it('holder, seize and expire act on the key as another provisioner or the TTL would', async () => {
    let now = 0;
    const bucket = new MemoryElectionBucket({ ttlMs: 100, now: () => now });
    const store = bucket.store();
    const seq = await value(store.create('a'));
    expect(bucket.holder()).toBe('a');
    bucket.seize('go-provisioner');
    expect(bucket.holder()).toBe('go-provisioner');
    await expect(value(store.update('a', seq))).rejects.toMatchObject({ errCode: 10071 });
    now = 100;
    expect(bucket.holder()).toBeUndefined();
    await value(store.create('a'));
    bucket.expire();
    expect(bucket.holder()).toBeUndefined();
  });
});
