import { NatsConnection, connect } from '@nats-io/transport-node';
import { ObservableInput, from, lastValueFrom } from 'rxjs';
import { ClaimHeldError, ClaimStore, ClaimStoreClosedError, claimKey } from '../../../lib/provision/claims/claims';
import { createClaimsBucket } from '../../../streams/claims/claimsBucket';
import { MemoryClaimBucket } from '../../../streams/memory/memoryClaimBucket';
import { natsClaimStore } from '../../../streams/claims/natsClaimStore';
import { CHORIA_ADMIN, CLAIMS_BUCKET, PROVISIONER, choriaAccountsConfig } from '../../helpers/choriaBroker';
import { useNatsServer } from '../../helpers/nats';
import { NATS_SERVERS } from '../../helpers/natsServers';

const TTL_MS = 1500;
const value = <T>(input: ObservableInput<T>): Promise<T> => lastValueFrom(from(input));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let keys = 0;
/** A key no earlier test touched, so the cases do not wait for each other's values to age out. */
const fresh = (): string => `node-${++keys}.example.net`;

/** The same cases for the in-memory bucket and for the real one: the memory one is only as good as it agrees. */
function claimStoreCases(name: 'in memory' | 'through the grant', make: () => Promise<ClaimStore>): void {
  // eslint-disable-next-line jest/valid-title -- the title is one of two literal strings
  describe(name, () => {
    it('reads the bucket TTL', async () => {
      expect(await value((await make()).ttl())).toBe(TTL_MS);
    });

    it('create wins once; a second create is refused as held; update from the last revision keeps it, from an old one is refused', async () => {
      const store = await make();
      const key = fresh();
      const first = await value(store.create(key, 'a'));
      await expect(value(store.create(key, 'b'))).rejects.toBeInstanceOf(ClaimHeldError);
      const second = await value(store.update(key, 'a', first));
      expect(second).toBeGreaterThan(first);
      await expect(value(store.update(key, 'b', first))).rejects.toBeInstanceOf(ClaimHeldError);
    });

    it('a released claim can be created again (over the delete marker); a release from an old revision leaves the holder alone', async () => {
      const store = await make();
      const key = fresh();
      const first = await value(store.create(key, 'a'));
      await value(store.release(key, first));
      const again = await value(store.create(key, 'b'));
      await value(store.release(key, first));
      await expect(value(store.create(key, 'c'))).rejects.toBeInstanceOf(ClaimHeldError);
      await value(store.release(key, again));
      await value(store.create(key, 'c'));
    });

    it('a claim not written again within the TTL ages out: create wins, and the old holder can no longer update it', async () => {
      const store = await make();
      const key = fresh();
      const first = await value(store.create(key, 'a'));
      const refreshed = await value(store.update(key, 'a', first));
      await sleep(TTL_MS * 0.6);
      // Written 0.6 TTL ago: still held.
      await expect(value(store.create(key, 'b'))).rejects.toBeInstanceOf(ClaimHeldError);
      await sleep(TTL_MS * 0.4 + 1000);
      await value(store.create(key, 'b'));
      await expect(value(store.update(key, 'a', refreshed))).rejects.toBeInstanceOf(ClaimHeldError);
    });

    it("adopts the key when its last value is the owner's own (a create written but not acknowledged), from the revision read; refuses another's or a free key", async () => {
      const store = await make();
      const key = fresh();
      const first = await value(store.create(key, 'a'));
      const adopted = await value(store.adopt!(key, 'a'));
      expect(adopted).toBeGreaterThan(first);
      await expect(value(store.update(key, 'a', first))).rejects.toBeInstanceOf(ClaimHeldError);
      await expect(value(store.adopt!(key, 'b'))).rejects.toBeInstanceOf(ClaimHeldError);
      await value(store.release(key, adopted));
      await expect(value(store.adopt!(key, 'a'))).rejects.toBeInstanceOf(ClaimHeldError);
    });

    it('takes any identity through its claim key', async () => {
      const store = await make();
      const key = claimKey(`odd identity ${++keys} *>`);
      await value(store.create(key, 'a'));
      await expect(value(store.create(key, 'b'))).rejects.toBeInstanceOf(ClaimHeldError);
    });
  });
}

describe('the claims bucket', () => {
  claimStoreCases('in memory', async () => new MemoryClaimBucket({ ttlMs: TTL_MS }).store());

  describe.each(NATS_SERVERS)(
    'on $name laid out as a Choria broker (the provisioning account reaches it through choria.streams)',
    ({ binary }) => {
      const server = useNatsServer({ config: choriaAccountsConfig, binary });
      const connections: NatsConnection[] = [];
      let store: ClaimStore | undefined;
      beforeAll(async () => {
        const admin = await connect({ servers: server().url, user: CHORIA_ADMIN.user, pass: CHORIA_ADMIN.password });
        await createClaimsBucket(admin, { ttlMs: TTL_MS });
        await admin.close();
        const nc = await connect({
          servers: server().url,
          user: PROVISIONER.user,
          pass: PROVISIONER.password,
          inboxPrefix: 'provisioning.reply',
        });
        connections.push(nc);
        store = natsClaimStore({ nc, bucket: CLAIMS_BUCKET, apiPrefix: 'choria.streams' });
      });
      afterAll(async () => {
        await Promise.all(connections.map((nc) => nc.close()));
      });

      claimStoreCases('through the grant', async () => store as ClaimStore);

      it('the provisioning account has no JetStream of its own: without the prefix nothing works', async () => {
        const direct = natsClaimStore({ nc: connections[0], bucket: CLAIMS_BUCKET, apiPrefix: '$JS.API' });
        await expect(value(direct.ttl())).rejects.toThrow();
      });

      it('a bucket that is not there is an error, not a claim', async () => {
        const missing = natsClaimStore({ nc: connections[0], bucket: 'NO_SUCH_BUCKET', apiPrefix: 'choria.streams', timeoutMs: 500 });
        await expect(value(missing.ttl())).rejects.toThrow();
        await expect(value(missing.create('n1', 'a'))).rejects.not.toBeInstanceOf(ClaimHeldError);
      });

      it('a release once its connection is closed says so (the claim stage then stops trying it again)', async () => {
        const nc = await connect({
          servers: server().url,
          user: PROVISIONER.user,
          pass: PROVISIONER.password,
          inboxPrefix: 'provisioning.reply',
        });
        const closing = natsClaimStore({ nc, bucket: CLAIMS_BUCKET, apiPrefix: 'choria.streams' });
        const revision = await value(closing.create('closing-node', 'a'));
        await nc.close();
        await expect(value(closing.release('closing-node', revision))).rejects.toBeInstanceOf(ClaimStoreClosedError);
      });
    },
  );
});
