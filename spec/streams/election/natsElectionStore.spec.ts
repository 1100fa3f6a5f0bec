import { Kvm } from '@nats-io/kv';
import { NatsConnection, connect } from '@nats-io/transport-node';
import { from, lastValueFrom } from 'rxjs';
import { ElectionEvent, campaign } from '../../../lib/election/campaign';
import { JetStreamApiError, natsElectionStore } from '../../../streams/election/natsElectionStore';
import { CHORIA_ADMIN, PROVISIONER, choriaAccountsConfig } from '../../helpers/choriaBroker';
import { useNatsServer } from '../../helpers/nats';
import { NATS_SERVERS } from '../../helpers/natsServers';
import { waitFor } from '../../helpers/waitFor';

const TTL_MS = 2000;

describe.each(NATS_SERVERS)("the election over $name, with only the provisioning account's rights", ({ binary }) => {
  const server = useNatsServer({ config: choriaAccountsConfig, binary });
  let admin: NatsConnection;
  const provisioners: NatsConnection[] = [];

  const provisioner = async (): Promise<NatsConnection> => {
    const nc = await connect({
      servers: server().url,
      user: PROVISIONER.user,
      pass: PROVISIONER.password,
      inboxPrefix: 'provisioning.reply',
    });
    provisioners.push(nc);
    return nc;
  };

  /**
   * Waits until the bucket holds no value for the key: an earlier test's value lapses with the
   * bucket TTL, but when the server removes it is its own business, so it is waited for.
   */
  const keyLapsed = async (): Promise<void> => {
    const kv = await new Kvm(admin).open('CHORIA_LEADER_ELECTION');
    await waitFor(async () => (await kv.get('provisioner')) === null, 'the election key to lapse', 10 * TTL_MS);
  };

  beforeAll(async () => {
    // The broker (here, its admin) creates the bucket, as Choria's broker does when Streams is on.
    admin = await connect({ servers: server().url, user: CHORIA_ADMIN.user, pass: CHORIA_ADMIN.password });
    await new Kvm(admin).create('CHORIA_LEADER_ELECTION', { ttl: TTL_MS, history: 1 });
  });

  afterAll(async () => {
    await Promise.all(provisioners.map((nc) => nc.close()));
    await admin.close();
  });

  it("cannot reach the JetStream API beyond the bucket's stream info (the account is really restricted)", async () => {
    const nc = await provisioner();
    // Nothing answers the JetStream account info under the prefix: only the bucket's info is imported.
    await expect(nc.request('choria.streams.INFO', '', { timeout: 1000 })).rejects.toThrow();
    // The account has no JetStream of its own: the server says so instead of answering.
    const own = (await nc.request('$JS.API.INFO', '', { timeout: 1000 })).json<{ error?: { code: number } }>();
    expect(own.error?.code).toBe(503);
  });

  it('reads the TTL from the stream info through the choria.streams import', async () => {
    const store = natsElectionStore({ nc: await provisioner(), apiPrefix: 'choria.streams' });
    expect(await lastValueFrom(from(store.ttl()))).toBe(TTL_MS);
  });

  it('create succeeds once; a second create is refused with wrong-last-sequence; update from the last sequence works', async () => {
    const store = natsElectionStore({ nc: await provisioner(), apiPrefix: 'choria.streams', key: 'provisioner' });
    // Whatever an earlier test left must expire first.
    await keyLapsed();
    const first = await lastValueFrom(from(store.create('rx-a')));
    const refused = lastValueFrom(from(store.create('rx-b')));
    await expect(refused).rejects.toBeInstanceOf(JetStreamApiError);
    await expect(refused).rejects.toMatchObject({ errCode: 10071 });
    const second = await lastValueFrom(from(store.update('rx-a', first)));
    expect(second).toBeGreaterThan(first);
    await expect(lastValueFrom(from(store.update('rx-b', first)))).rejects.toMatchObject({ errCode: 10071 });
    // What a Go provisioner or `choria election view` would read: the value is the identity.
    const kv = await new Kvm(admin).open('CHORIA_LEADER_ELECTION');
    expect((await kv.get('provisioner'))?.string()).toBe('rx-a');
  });

  it('a campaign wins through the restricted account; a second candidate does not lead while the first does', async () => {
    await keyLapsed();
    const seen: Array<[string, ElectionEvent]> = [];
    const one = campaign({
      identity: 'rx-1',
      store: natsElectionStore({ nc: await provisioner(), apiPrefix: 'choria.streams' }),
      startSplayMs: 0,
    });
    const sub1 = one.subscribe((e) => seen.push(['rx-1', e]));
    await waitFor(() => seen.length > 0, 'rx-1 to win');
    expect(seen).toEqual([['rx-1', 'won']]);
    // The leader refreshed the key just before announcing: another identity's create is refused
    // (a wrong-last-sequence error). Only a leader stalled past the TTL could have lost the key by
    // now, and it must then stand down at its next refresh.
    const taken = await lastValueFrom(
      from(natsElectionStore({ nc: await provisioner(), apiPrefix: 'choria.streams' }).create('rx-2')),
    ).then(
      () => true,
      (error: unknown) => {
        expect(error).toMatchObject({ errCode: 10071 });
        return false;
      },
    );
    if (taken)
      await waitFor(() => seen.some(([identity, event]) => identity === 'rx-1' && event === 'lost'), 'rx-1 to stand down', 5 * TTL_MS);

    const two = campaign({
      identity: 'rx-2',
      store: natsElectionStore({ nc: await provisioner(), apiPrefix: 'choria.streams' }),
      startSplayMs: 0,
    });
    const sub2 = two.subscribe((e) => seen.push(['rx-2', e]));
    // rx-2 campaigns every quarter TTL for a while.
    await new Promise((r) => setTimeout(r, 2 * TTL_MS));
    sub2.unsubscribe();
    // What the election promises is one leader at a time, not that a leader on a loaded machine
    // never misses its refreshes: had rx-1 stalled past the TTL and rx-2 won, rx-1 must stand down
    // at its next refresh. Two leaders for good is the failure.
    const rx2Won = seen.some(([identity, event]) => identity === 'rx-2' && event === 'won');
    await waitFor(
      () => !rx2Won || seen.some(([identity, event]) => identity === 'rx-1' && event === 'lost'),
      'rx-1 to stand down after rx-2 won',
      5 * TTL_MS,
    );
    sub1.unsubscribe();
  });

  it('another identity holding the key (a Go provisioner) keeps rxfleet a candidate until the key expires', async () => {
    await keyLapsed();
    const kv = await new Kvm(admin).open('CHORIA_LEADER_ELECTION');
    const beforeCreate = Date.now();
    await kv.create('provisioner', 'go-provisioner.example.net');
    const events: ElectionEvent[] = [];
    let wonAt = 0;
    const sub = campaign({
      identity: 'rx-3',
      store: natsElectionStore({ nc: await provisioner(), apiPrefix: 'choria.streams' }),
      startSplayMs: 0,
    }).subscribe((e) => {
      events.push(e);
      wonAt = Date.now();
    });
    // The Go instance never refreshes: its key lapses with the bucket TTL, and only then can rx-3
    // take over. When the server removes a lapsed key is its own business, so it is waited for.
    await waitFor(() => events.length > 0, 'rx-3 to win', 10 * TTL_MS);
    sub.unsubscribe();
    expect(events).toEqual(['won']);
    expect(wonAt - beforeCreate).toBeGreaterThanOrEqual(TTL_MS);
    expect((await kv.get('provisioner'))?.string()).toBe('rx-3');
  });
});
