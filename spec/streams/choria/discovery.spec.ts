import { firstValueFrom } from 'rxjs';
import { PROVISION_RPCS } from '../../../lib/choria/agents';
import { decodeRequest, encodeReply } from '../../../lib/choria/protocol/codec';
import { startSimulatedFleet } from '../../../streams/simulate/simulatedFleet';
import { broadcastDiscovery } from '../../../streams/choria/discovery';
import { ChoriaRpcClient } from '../../../streams/choria/rpcClient';
import { openNatsConnection } from '../../../streams/natsConnection';
import { ChoriaWorld, PROVISIONED_CONFIG, configureInput, nextEvent, startChoriaWorld } from '../../helpers/choria';
import { useNatsServer } from '../../helpers/nats';

const sorted = (ids: string[]): string[] => [...ids].sort();

describe('broadcast discovery over a real nats-server', () => {
  const server = useNatsServer({ jetstream: false });

  it('finds nobody, at once, when nothing listens (no responders means none)', async () => {
    const connection = await openNatsConnection({ servers: [server().url], inboxPrefix: 'provisioning.reply' });
    const client = new ChoriaRpcClient({ nc: connection.nc, identity: 'lonely.example.net' });
    expect(await firstValueFrom(broadcastDiscovery(client, { timeoutMs: 60_000 }))).toEqual([]);
    client.close();
    await connection.drain();
  });

  describe('with a fleet', () => {
    let world: ChoriaWorld;
    beforeAll(async () => {
      world = await startChoriaWorld(server().url, { nodes: 12, token: 't', restartDelayMs: 5 });
    });
    afterAll(() => world.stop());

    it('finds exactly the nodes in provisioning mode, not the provisioned or silent ones', async () => {
      expect(sorted(await firstValueFrom(broadcastDiscovery(world.client)))).toEqual(sorted(world.fleet.identities()));

      const done = ['node-2.example.net', 'node-5.example.net', 'node-11.example.net'];
      for (const id of done) {
        const provisioned = nextEvent(world.fleet.events$, 'provisioned', id);
        await firstValueFrom(world.client.call(PROVISION_RPCS.configure, id, configureInput(PROVISIONED_CONFIG, 't')));
        await firstValueFrom(world.client.call(PROVISION_RPCS.restart, id, { token: 't', splay: 1 }));
        await provisioned;
      }
      const silent = world.fleet.silence(['node-7.example.net']);

      const found = await firstValueFrom(broadcastDiscovery(world.client));
      expect(sorted(found)).toEqual(sorted(world.fleet.identities().filter((id) => !done.includes(id) && !silent.includes(id))));
      expect(new Set(found).size).toBe(found.length);
      world.fleet.unsilence();
    });

    it('works the same in protocol v2, taking identities from the v2 sender header', async () => {
      const v2 = world.newClient({ protocol: { version: 'v2', security: { callerJwt: 'caller.jwt' } } });
      const found = await firstValueFrom(broadcastDiscovery(v2));
      expect(found).toHaveLength(world.fleet.stats().provisioning);
    });

    it('filters on the agent: nodes do not answer for an agent they do not run', async () => {
      expect(await firstValueFrom(broadcastDiscovery(world.client, { agent: 'puppet', timeoutMs: 300 }))).toEqual([]);
    });

    it('removes duplicates when an identity answers twice', async () => {
      const twinConnection = await openNatsConnection({ servers: [server().url] });
      const twin = await startSimulatedFleet({ nc: twinConnection.nc, nodes: 2 });
      try {
        const before = world.fleet.stats().discoveryReplies;
        const found = await firstValueFrom(broadcastDiscovery(world.client));
        // node-1 answers from both fleets; node-2 only from the twin (the first fleet's was provisioned).
        expect(twin.stats().discoveryReplies).toBe(2);
        expect(world.fleet.stats().discoveryReplies - before).toBe(world.fleet.stats().provisioning);
        expect(found.filter((id) => id === 'node-1.example.net')).toHaveLength(1);
        expect(found.filter((id) => id === 'node-2.example.net')).toHaveLength(1);
        expect(new Set(found).size).toBe(found.length);
      } finally {
        await twin.stop();
        await twinConnection.drain();
      }
    });

    it('counts and skips a malformed reply among good ones', async () => {
      const rogue = await openNatsConnection({ servers: [server().url] });
      rogue.nc.subscribe('provisioning.broadcast.agent.discovery', {
        callback: (_e, msg) => {
          const request = decodeRequest(msg.data);
          if (!request.ok) return;
          rogue.nc.publish(request.value.replyTo, '{"protocol":"choria:transport:1","data":"%%%","headers":{"mc_sender":"rogue"}}');
          rogue.nc.publish(
            request.value.replyTo,
            encodeReply(
              {
                requestId: request.value.requestId,
                senderId: 'honest-rogue.example.net',
                agent: 'discovery',
                time: Date.now(),
                payload: 'pong',
              },
              'v1',
            ),
          );
        },
      });
      await rogue.nc.flush();
      try {
        const before = world.client.badMessages.count('broadcast_reply', 'base64');
        const found = await firstValueFrom(broadcastDiscovery(world.client));
        expect(found).toContain('honest-rogue.example.net');
        expect(found).not.toContain('rogue');
        expect(world.client.badMessages.count('broadcast_reply', 'base64')).toBe(before + 1);
      } finally {
        await rogue.drain();
      }
    });
  });
});
