import 'reflect-metadata';
import { jwtVerify } from 'jose';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { firstValueFrom, take, toArray } from 'rxjs';
import { ActionSpec, PROVISION_RPCS } from '../../../lib/choria/agents';
import { RpcStatusError, RpcTimeoutError } from '../../../lib/choria/errors';
import { encryptPrivateKey } from '../../../lib/choria/keyTransport';
import { createFleetKeys } from '../../../lib/simulate/fleetKeys';
import { seededRandom } from '../../../lib/simulate/seededRandom';
import { broadcastDiscovery } from '../../../streams/choria/discovery';
import { lifecycleEvents } from '../../../streams/choria/lifecycleListener';
import { ChoriaWorld, PROVISIONED_CONFIG, configureInput, nextEvent, startChoriaWorld } from '../../helpers/choria';
import { useNatsServer } from '../../helpers/nats';
import { waitFor } from '../../helpers/waitFor';

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

const helperKey = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

describe('the simulated fleet over a real nats-server', () => {
  const server = useNatsServer({ jetstream: false });

  describe('a provisioning pass', () => {
    let world: ChoriaWorld;
    beforeAll(async () => {
      world = await startChoriaWorld(server().url, { nodes: 6, token: 's3cret', restartDelayMs: 5 });
    });
    afterAll(() => world.stop());
    const call = <I extends object, O>(spec: ActionSpec<I, O>, id: string, input: I) => firstValueFrom(world.client.call(spec, id, input));

    it('records everything a node received: configuration, TLS files, the decrypted key, server JWT, policies, once', async () => {
      const id = 'node-1.example.net';
      const events = firstValueFrom(
        lifecycleEvents(world.clientConnection.nc, { type: '*', component: 'provision_mode_server' }).pipe(take(2), toArray()),
      );
      const serverStartup = firstValueFrom(lifecycleEvents(world.clientConnection.nc, { type: 'startup', component: 'server' }));
      await world.clientConnection.nc.flush();

      const jwt = await call(PROVISION_RPCS.jwt, id, { token: 's3cret' });
      await call(PROVISION_RPCS.gen25519, id, { token: 's3cret', nonce: 'abc' });
      const sealed = encryptPrivateKey(helperKey, jwt.data.ecdh_public);
      const configuration = { ...PROVISIONED_CONFIG, identity: id };
      const reply = await call(PROVISION_RPCS.configure, id, {
        ...configureInput(configuration, 's3cret'),
        certificate: 'CERT PEM',
        ca: 'CA PEM',
        ssldir: '/etc/choria/ssl',
        key: sealed.key,
        ecdh_public: sealed.ecdhPublic,
        server_jwt: 'server.jwt.value',
        action_policies: { 'default.policy': 'policy default allow' },
        opa_policies: { 'default.rego': 'package choria' },
      });
      expect(reply.data.message).toBe('Wrote 4 lines to /etc/choria/server.conf');
      const provisioned = nextEvent(world.fleet.events$, 'provisioned', id);
      expect((await call(PROVISION_RPCS.restart, id, { token: 's3cret', splay: 1 })).data.message).toBe(
        'Restarting Choria Server after 2s',
      );
      await provisioned;

      const record = world.fleet.node(id);
      expect(record).toMatchObject({
        state: 'provisioned',
        configured: 1,
        provisioned: 1,
        boots: 2,
        configuration,
        certificate: 'CERT PEM',
        ca: 'CA PEM',
        ssldir: '/etc/choria/ssl',
        key: helperKey,
        serverJwt: 'server.jwt.value',
        actionPolicies: { 'default.policy': 'policy default allow' },
        opaPolicies: { 'default.rego': 'package choria' },
      });
      expect(record?.ed25519PublicKey).toMatch(/^[0-9a-f]{64}$/);
      // configure publishes `provisioned`, restart publishes `shutdown`, and the node comes back as a plain server.
      expect((await events).map((e) => [e.type, e.identity])).toEqual([
        ['provisioned', id],
        ['shutdown', id],
      ]);
      expect(await serverStartup).toMatchObject({ type: 'startup', identity: id, component: 'server' });
      expect(world.fleet.stats()).toMatchObject({ provisioned: 1, configured: 1, duplicates: 0 });
    });

    it('no longer answers on the provisioning collective once provisioned', async () => {
      const error = await failureOf(
        firstValueFrom(world.client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {}, { timeoutMs: 150 })),
      );
      expect(error).toBeInstanceOf(RpcTimeoutError);
    });

    it('counts a second configure of a node as a duplicate', async () => {
      const id = 'node-2.example.net';
      await call(PROVISION_RPCS.configure, id, configureInput(PROVISIONED_CONFIG, 's3cret'));
      const duplicate = nextEvent(world.fleet.events$, 'duplicate', id);
      await call(PROVISION_RPCS.configure, id, configureInput(PROVISIONED_CONFIG, 's3cret'));
      await duplicate;
      expect(world.fleet.node(id)?.configured).toBe(2);
      expect(world.fleet.stats().duplicates).toBe(1);
    });

    it('loops back into provisioning when the configuration does not turn provisioning off', async () => {
      const id = 'node-3.example.net';
      await call(PROVISION_RPCS.configure, id, configureInput({ 'plugin.choria.middleware_hosts': 'nats://b:4222' }, 's3cret'));
      const loop = nextEvent(world.fleet.events$, 'provisioning-loop', id);
      await call(PROVISION_RPCS.restart, id, { token: 's3cret', splay: 1 });
      await loop;
      expect(world.fleet.node(id)).toMatchObject({ state: 'provisioning', provisioningLoops: 1, boots: 2 });
      expect(await firstValueFrom(broadcastDiscovery(world.client))).toContain(id);
    });

    it('refuses to restart into a configuration that enables provisioning, and configure without data or with a key but no ECDH key', async () => {
      const id = 'node-4.example.net';
      await call(PROVISION_RPCS.configure, id, configureInput({ 'plugin.choria.server.provision': 'true' }, 's3cret'));
      const restart = await failureOf(call(PROVISION_RPCS.restart, id, { token: 's3cret', splay: 1 }));
      expect(restart).toMatchObject({ statusmsg: 'Configuration /etc/choria/server.conf enables provisioning, restart cannot continue' });
      const empty = await failureOf(call(PROVISION_RPCS.configure, id, { ...configureInput({}, 's3cret'), config: '' }));
      expect(empty).toMatchObject({ statusmsg: 'Did not receive any configuration to write, cannot write a empty configuration file' });
      const keyOnly = await failureOf(call(PROVISION_RPCS.configure, id, { ...configureInput(PROVISIONED_CONFIG, 's3cret'), key: 'x' }));
      expect(keyOnly).toMatchObject({ statusmsg: 'EDCH Public Key not supplied while sending a private key' });
    });

    it('cannot decrypt a key encrypted for the ECDH key of an earlier jwt call (the key is regenerated per call)', async () => {
      const id = 'node-5.example.net';
      const first = await call(PROVISION_RPCS.jwt, id, { token: 's3cret' });
      const second = await call(PROVISION_RPCS.jwt, id, { token: 's3cret' });
      expect(second.data.ecdh_public).not.toBe(first.data.ecdh_public);
      const stale = encryptPrivateKey(helperKey, first.data.ecdh_public);
      const error = await failureOf(
        call(PROVISION_RPCS.configure, id, {
          ...configureInput(PROVISIONED_CONFIG, 's3cret'),
          certificate: 'C',
          ca: 'A',
          ssldir: '/s',
          key: stale.key,
          ecdh_public: stale.ecdhPublic,
        }),
      );
      expect(error).toBeInstanceOf(RpcStatusError);
      expect((error as RpcStatusError).statusmsg).toMatch(/^Could not decrypt private key: /);
      expect(world.fleet.node(id)).toMatchObject({ configured: 0 });
      expect(world.fleet.node(id)?.key).toBeUndefined();
    });

    it('checks the token on every choria_provision action', async () => {
      const id = 'node-6.example.net';
      const inputs: [string, object][] = [
        ['jwt', { token: 'bad' }],
        ['gen25519', { token: 'bad', nonce: 'n' }],
        ['gencsr', { token: 'bad', cn: id }],
        ['configure', configureInput(PROVISIONED_CONFIG, 'bad')],
        ['restart', { token: 'bad', splay: 1 }],
        ['shutdown', { token: 'bad' }],
      ];
      const before = world.fleet.stats().tokenRefusals;
      for (const [action, input] of inputs) {
        const error = await failureOf(firstValueFrom(world.client.request(id, 'choria_provision', action, input)));
        expect(error).toMatchObject({ statuscode: 1, statusmsg: 'Incorrect provision token supplied' });
      }
      expect(world.fleet.stats().tokenRefusals - before).toBe(inputs.length);
      expect(world.fleet.node(id)?.tokenRefusals).toBe(inputs.length);
    });

    it('answers an unknown action with status 2, and counts a malformed request without answering it', async () => {
      const error = await failureOf(firstValueFrom(world.client.request('node-6.example.net', 'choria_provision', 'explode', {})));
      expect(error).toMatchObject({ statuscode: 2, statusmsg: 'Unknown action explode for agent choria_provision' });
      const before = world.fleet.stats().badRequests;
      world.clientConnection.nc.publish(
        'provisioning.node.node-6.example.net',
        '{"protocol":"choria:transport:1","data":"!!","headers":{"reply-to":"x"}}',
      );
      await world.clientConnection.nc.flush();
      await world.fleetConnection.nc.flush();
      expect(world.fleet.stats().badRequests).toBe(before + 1);
    });

    it('drops a request outside its TTL, as a server does', async () => {
      const skewed = world.newClient({ identity: 'skewed.example.net', now: () => Date.now() - 10 * 60_000 });
      const before = world.fleet.stats().staleRequests;
      expect(
        await failureOf(firstValueFrom(skewed.call(PROVISION_RPCS.inventory, 'node-6.example.net', {}, { timeoutMs: 150 }))),
      ).toBeInstanceOf(RpcTimeoutError);
      expect(world.fleet.stats().staleRequests).toBe(before + 1);
    });
  });

  describe('the provisioning lock', () => {
    it("refuses other callers for two minutes from the holder's last locked call, and not for unlocked actions", async () => {
      let clock = 1_000_000;
      const world = await startChoriaWorld(server().url, { nodes: 1, now: () => clock });
      try {
        const id = 'node-1.example.net';
        const other = world.newClient({ identity: 'other.example.net' });
        await firstValueFrom(world.client.call(PROVISION_RPCS.jwt, id, { token: '' }));
        await expect(firstValueFrom(other.call(PROVISION_RPCS.jwt, id, { token: '' }))).rejects.toMatchObject({
          name: 'ProvisioningLockError',
          statusmsg: 'Could not obtain provisioning lock',
        });
        await expect(firstValueFrom(other.call(PROVISION_RPCS.inventory, id, {}))).resolves.toMatchObject({ statuscode: 0 });
        clock += 100_000;
        await firstValueFrom(world.client.call(PROVISION_RPCS.gen25519, id, { token: '', nonce: 'n' })); // extends to +220 s
        clock += 100_000;
        await expect(firstValueFrom(other.call(PROVISION_RPCS.gencsr, id, { token: '', cn: id }))).rejects.toMatchObject({
          name: 'ProvisioningLockError',
        });
        clock += 20_001;
        await expect(firstValueFrom(other.call(PROVISION_RPCS.jwt, id, { token: '' }))).resolves.toMatchObject({ statuscode: 0 });
        await expect(firstValueFrom(world.client.call(PROVISION_RPCS.jwt, id, { token: '' }))).rejects.toMatchObject({
          name: 'ProvisioningLockError',
        });
        expect(world.fleet.node(id)?.lockRefusals).toBe(3);
        expect(world.fleet.stats().lockRefusals).toBe(3);
      } finally {
        await world.stop();
      }
    });
  });

  describe('configured by two callers', () => {
    it('counts a node once when a second caller configures it, and a configure by the same caller again only as a duplicate', async () => {
      // No node-side lock, so that two callers can both configure: what the count is there to catch.
      const world = await startChoriaWorld(server().url, { nodes: 2, lockWindowMs: 0 });
      try {
        const [first, second] = ['node-1.example.net', 'node-2.example.net'];
        const other = world.newClient({ identity: 'other.example.net' });
        const third = world.newClient({ identity: 'third.example.net' });
        const configure = (client: typeof other, id: string) =>
          firstValueFrom(client.call(PROVISION_RPCS.configure, id, configureInput(PROVISIONED_CONFIG)));

        await configure(world.client, first);
        await configure(world.client, first);
        expect(world.fleet.stats()).toMatchObject({ configured: 2, duplicates: 1, configuredByTwo: 0 });

        const byTwo = nextEvent(world.fleet.events$, 'configured-by-two', second);
        await configure(world.client, second);
        await configure(other, second);
        await byTwo;
        await configure(third, second);
        await configure(world.client, second);
        expect(world.fleet.stats()).toMatchObject({ configured: 6, duplicates: 4, configuredByTwo: 1 });
        expect(world.fleet.node(first)?.configuredBy).toEqual([world.client.callerId]);
        expect(world.fleet.node(second)?.configuredBy).toEqual([world.client.callerId, other.callerId, third.callerId]);
      } finally {
        await world.stop();
      }
    });
  });

  describe('upgrades', () => {
    it('reports version and upgradable, publishes upgraded on release_update and comes back in provisioning mode with the new version', async () => {
      const world = await startChoriaWorld(server().url, { nodes: 2, upgradable: true, version: '0.28.0', restartDelayMs: 5 });
      try {
        const id = 'node-1.example.net';
        const inventory = await firstValueFrom(world.client.call(PROVISION_RPCS.inventory, id, {}));
        expect(inventory.data).toMatchObject({ version: '0.28.0', upgradable: true });
        const upgradedEvent = firstValueFrom(lifecycleEvents(world.clientConnection.nc, { type: 'upgraded' }));
        const startup = firstValueFrom(lifecycleEvents(world.clientConnection.nc, { type: 'startup' }));
        await world.clientConnection.nc.flush();
        const reply = await firstValueFrom(
          world.client.call(PROVISION_RPCS.release_update, id, { token: '', repository: 'https://repo.example.net', version: '0.29.4' }),
        );
        expect(reply.data.message).toBe('Restarting Choria Server after 2s');
        expect(await upgradedEvent).toMatchObject({ identity: id, version: '0.28.0', newVersion: '0.29.4' });
        expect(await startup).toMatchObject({ identity: id, component: 'provision_mode_server', version: '0.29.4' });
        expect((await firstValueFrom(world.client.call(PROVISION_RPCS.inventory, id, {}))).data.version).toBe('0.29.4');
        expect(world.fleet.node(id)).toMatchObject({ state: 'provisioning', upgrades: ['0.29.4'], version: '0.29.4' });
        expect(world.fleet.stats().upgraded).toBe(1);
        const claims = (
          await jwtVerify(
            world.fleet.keys.jwt,
            createPublicKey({
              key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(world.fleet.jwtVerifyKey, 'hex')]),
              format: 'der',
              type: 'spki',
            }),
          )
        ).payload;
        expect(claims.update).toBe(true);
      } finally {
        await world.stop();
      }
    });

    it("fails release_update with Go's rolled-back message when told to, and refuses it when the JWT does not allow updates", async () => {
      const failing = await startChoriaWorld(server().url, { nodes: 1, upgradable: true, failUpgrades: true });
      const locked = await startChoriaWorld(server().url, { nodes: 1, identity: (i) => `fixed-${i}.example.net` });
      try {
        await expect(
          firstValueFrom(
            failing.client.call(PROVISION_RPCS.release_update, 'node-1.example.net', {
              token: '',
              repository: 'https://r',
              version: '2.0.0',
            }),
          ),
        ).rejects.toMatchObject({
          statusmsg: 'Update to version 2.0.0 failed, release rolled back: simulated failure',
        });
        expect(failing.fleet.node('node-1.example.net')).toMatchObject({ version: '0.29.4', upgrades: [] });
        await expect(
          firstValueFrom(
            locked.client.call(PROVISION_RPCS.release_update, 'fixed-1.example.net', {
              token: '',
              repository: 'https://r',
              version: '2.0.0',
            }),
          ),
        ).rejects.toMatchObject({
          // As go-choria says it: the JWT's update claim is the server's configuration.
          statusmsg: 'Version updates is not enabled in the configuration',
        });
      } finally {
        await failing.stop();
        await locked.stop();
      }
    });
  });

  describe('faults and pacing', () => {
    it('answers a fraction of RPCs with a simulated failure, never discovery', async () => {
      const world = await startChoriaWorld(server().url, { nodes: 5, failureRate: 1 });
      try {
        await expect(firstValueFrom(world.client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {}))).rejects.toMatchObject({
          statuscode: 5,
          statusmsg: 'simulated failure',
        });
        expect(await firstValueFrom(broadcastDiscovery(world.client))).toHaveLength(5);
        expect(world.fleet.stats().injectedFailures).toBe(1);
      } finally {
        await world.stop();
      }
    });

    it('with a seeded failure rate, fails the same requests every run', async () => {
      const outcomes: string[][] = [];
      for (let run = 0; run < 2; run++) {
        const world = await startChoriaWorld(server().url, { nodes: 1, failureRate: 0.5, random: seededRandom(42) });
        const seen: string[] = [];
        for (let i = 0; i < 12; i++) {
          seen.push(
            await firstValueFrom(world.client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {})).then(
              () => 'ok',
              () => 'failed',
            ),
          );
        }
        outcomes.push(seen);
        await world.stop();
      }
      expect(outcomes[0]).toEqual(outcomes[1]);
      expect(outcomes[0]).toContain('ok');
      expect(outcomes[0]).toContain('failed');
    });

    it('adds its latency before each reply', async () => {
      const world = await startChoriaWorld(server().url, { nodes: 1, latencyMs: 300 });
      try {
        await expect(
          firstValueFrom(world.client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {}, { timeoutMs: 20 })),
        ).rejects.toBeInstanceOf(RpcTimeoutError);
        await expect(
          firstValueFrom(world.client.call(PROVISION_RPCS.inventory, 'node-1.example.net', {}, { timeoutMs: 5000 })),
        ).resolves.toMatchObject({ statuscode: 0 });
      } finally {
        await world.stop();
      }
    });

    it('boots at its boot rate, each node announcing itself once', async () => {
      const world = await startChoriaWorld(server().url, { nodes: 10, bootRate: 20, lifecycleFormat: 'choria' });
      try {
        // Ten batches a second: 2 nodes at once, the rest over the next half second.
        expect(world.fleet.stats().booted).toBe(2);
        await world.fleet.whenBooted();
        expect(world.fleet.stats().booted).toBe(10);
        expect(world.fleet.nodes().every((n) => n.boots === 1 && n.state === 'provisioning')).toBe(true);
      } finally {
        await world.stop();
      }
    });

    it('silences N nodes on request and from the start', async () => {
      const world = await startChoriaWorld(server().url, { nodes: 6, silent: 2 });
      try {
        const silenced = world.fleet.silence(1);
        expect(silenced).toEqual(['node-3.example.net']);
        const found = await firstValueFrom(broadcastDiscovery(world.client));
        expect(found.sort()).toEqual(['node-4.example.net', 'node-5.example.net', 'node-6.example.net']);
        expect(world.fleet.stats().silent).toBe(3);
      } finally {
        await world.stop();
      }
    });

    it('shuts a node down on request: silence, without a shutdown event (go-choria exits without one)', async () => {
      const world = await startChoriaWorld(server().url, { nodes: 2, shutdownDelayMs: 5 });
      try {
        const shutdownEvents: unknown[] = [];
        const listening = lifecycleEvents(world.clientConnection.nc, { type: 'shutdown' }).subscribe((e) => shutdownEvents.push(e));
        await world.clientConnection.nc.flush();
        const reply = await firstValueFrom(world.client.call(PROVISION_RPCS.shutdown, 'node-2.example.net', { token: '' }));
        expect(reply.data.message).toMatch(/^Shutting Choria Server down after \ds$/);
        await waitFor(() => world.fleet.node('node-2.example.net')?.state === 'shutdown', 'node-2 to shut down');
        expect(world.fleet.node('node-2.example.net')).toMatchObject({ state: 'shutdown', shutdownRequested: true });
        expect(await firstValueFrom(broadcastDiscovery(world.client))).toEqual(['node-1.example.net']);
        await world.clientConnection.nc.flush();
        listening.unsubscribe();
        expect(shutdownEvents).toEqual([]);
      } finally {
        await world.stop();
      }
    });
  });

  describe('the provisioning JWT', () => {
    it('is signed with ed25519 by default, verifiable with the hex key it publishes, with the claims of §3.5', async () => {
      const keys = await createFleetKeys({ claims: { token: 's3cret', urls: ['nats://b:4222'] } });
      expect(keys.jwtVerifyKey).toMatch(/^[0-9a-f]{64}$/);
      const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(keys.jwtVerifyKey, 'hex')]);
      const { payload, protectedHeader } = await jwtVerify(keys.jwt, createPublicKey({ key: spki, format: 'der', type: 'spki' }));
      expect(protectedHeader.alg).toBe('EdDSA');
      expect(payload).toMatchObject({
        cht: 's3cret',
        chs: false,
        chpd: true,
        chu: 'nats://b:4222',
        ou: 'choria',
        purpose: 'choria_provisioning',
        sub: 'choria_provisioning',
        extensions: null,
      });
      expect(typeof payload.exp).toBe('number');
      expect(payload.update).toBeUndefined();
    });

    it('is signed RS256 with an RSA key, given or generated, and publishes the PEM public key', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const keys = await createFleetKeys({
        claims: { token: '' },
        jwtSigningKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      });
      expect(keys.jwtKeyType).toBe('rsa');
      expect(keys.jwtVerifyKey).toBe(publicKey.export({ type: 'spki', format: 'pem' }).toString());
      expect((await jwtVerify(keys.jwt, createPublicKey(keys.jwtVerifyKey))).protectedHeader.alg).toBe('RS256');
    });

    it('takes a Choria-style 64-hex ed25519 seed', async () => {
      const keys = await createFleetKeys({ claims: { token: '' }, jwtSigningKey: `${'ab'.repeat(32)}\n` });
      const again = await createFleetKeys({ claims: { token: '' }, jwtSigningKey: 'ab'.repeat(32) });
      expect(keys.jwtVerifyKey).toBe(again.jwtVerifyKey);
      expect(keys.jwtKeyType).toBe('ed25519');
    });
  });
});
