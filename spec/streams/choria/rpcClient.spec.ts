import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPublicKey, verify } from 'node:crypto';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { PROVISION_RPCS } from '../../../lib/choria/agents';
import {
  NoRespondersError,
  ProvisioningLockError,
  RpcAbortedError,
  RpcConnectionLostError,
  RpcRetryError,
  RpcStatusError,
  RpcTimeoutError,
  isProvisioningLockError,
} from '../../../lib/choria/errors';
import { decodeRequest, encodeReply } from '../../../lib/choria/protocol/codec';
import { encodeAgentReply } from '../../../lib/choria/protocol/mcorpc';
import { newRequestId } from '../../../lib/choria/protocol/subjects';
import { AttemptRecord, retryRpc } from '../../../lib/choria/retry';
import { ChoriaRpcClient } from '../../../streams/choria/rpcClient';
import { openNatsConnection } from '../../../streams/natsConnection';
import { startNatsServer } from '../../../streams/natsServerProcess';
import { ChoriaWorld, startChoriaWorld } from '../../helpers/choria';
import { useNatsServer } from '../../helpers/nats';
import { waitFor } from '../../helpers/waitFor';
import { md5Hex } from '../../../lib/choria/protocol/encoding';

const N1 = 'node-1.example.net';

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe('the Choria RPC client over a real nats-server', () => {
  const server = useNatsServer({ jetstream: false });
  let world: ChoriaWorld;

  beforeAll(async () => {
    world = await startChoriaWorld(server().url, { nodes: 4, token: 's3cret', restartDelayMs: 10 });
  });
  afterAll(() => world.stop());

  it('waits discovery_timeout + the DDL timeout per attempt: 22 s for choria_provision, 4 s for rpcutil', () => {
    expect(world.client.timeoutMs('choria_provision')).toBe(22_000);
    expect(world.client.timeoutMs('rpcutil')).toBe(4_000);
  });

  it('asks one node for its inventory, and the reply carries what rpcutil answers', async () => {
    const reply = await firstValueFrom(world.client.call(PROVISION_RPCS.inventory, N1, {}));
    expect(reply).toMatchObject({ sender: N1, statuscode: 0, statusmsg: 'OK', version: 'v1' });
    expect(reply.data).toMatchObject({
      main_collective: 'provisioning',
      collectives: ['provisioning'],
      version: '0.29.4',
      upgradable: false,
    });
    expect(reply.data.agents).toContain('choria_provision');
    expect(world.fleet.node(N1)?.requests['rpcutil#inventory']).toBe(1);
  });

  it('speaks protocol v2 to the same servers, who answer in v2', async () => {
    const v2 = world.newClient({ protocol: { version: 'v2', security: { callerJwt: 'caller.jwt.token' } } });
    const reply = await firstValueFrom(v2.call(PROVISION_RPCS.inventory, 'node-2.example.net', {}));
    expect(reply.version).toBe('v2');
    expect(reply.sender).toBe('node-2.example.net');
  });

  it('turns a non-zero status into a typed error keeping the status message', async () => {
    const error = await failureOf(firstValueFrom(world.client.call(PROVISION_RPCS.jwt, 'node-3.example.net', { token: 'wrong' })));
    expect(error).toBeInstanceOf(RpcStatusError);
    expect(error).not.toBeInstanceOf(ProvisioningLockError);
    expect(error).toMatchObject({
      statuscode: 1,
      statusmsg: 'Incorrect provision token supplied',
      sender: 'node-3.example.net',
      rpc: 'choria_provision#jwt',
    });
    expect((error as Error).message).toBe('invalid response from node-3.example.net: Incorrect provision token supplied (1)');
  });

  it('recognises the provisioning-lock refusal of another caller, and the retry wrapper does not retry it (P10)', async () => {
    const jwt = await firstValueFrom(world.client.call(PROVISION_RPCS.jwt, N1, { token: 's3cret' }));
    expect(jwt.data.ecdh_public).toMatch(/^[0-9a-f]{64}$/);
    const other = world.newClient({ identity: 'other-provisioner.example.net' });
    const attempts: AttemptRecord[] = [];
    const failures: Error[] = [];
    const error = await failureOf(
      lastValueFrom(
        retryRpc(({ signal }) => other.call(PROVISION_RPCS.jwt, N1, { token: 's3cret' }, { signal }), {
          rpc: 'choria_provision#jwt',
          tries: 3,
          onAttempt: (r) => attempts.push(r),
          onFailed: (e) => failures.push(e),
        }),
      ),
    );
    expect(error).toBeInstanceOf(RpcRetryError);
    expect((error as Error).cause).toBeInstanceOf(ProvisioningLockError);
    expect(isProvisioningLockError(error)).toBe(true);
    expect(attempts).toHaveLength(1);
    expect(failures).toEqual([error]);
    expect(world.fleet.node(N1)?.lockRefusals).toBe(1);
    // The holder itself is not refused: each of its locked calls extends the lock.
    await expect(firstValueFrom(world.client.call(PROVISION_RPCS.jwt, N1, { token: 's3cret' }))).resolves.toMatchObject({ statuscode: 0 });
  });

  it('times out an attempt against a silent node, and the retry wrapper gives up with the P5 error', async () => {
    const [silent] = world.fleet.silence(['node-4.example.net']);
    const attempts: AttemptRecord[] = [];
    const failures: Error[] = [];
    const error = await failureOf(
      lastValueFrom(
        retryRpc(({ signal }) => world.client.call(PROVISION_RPCS.inventory, silent, {}, { signal, timeoutMs: 100 }), {
          rpc: 'rpcutil#inventory',
          tries: 3,
          backoffMs: [10, 10, 10, 10],
          onAttempt: (r) => attempts.push(r),
          onFailed: (e) => failures.push(e),
        }),
      ),
    );
    expect(error).toBeInstanceOf(RpcRetryError);
    expect(error).toMatchObject({ rpc: 'rpcutil#inventory', attempts: 3 });
    expect((error as Error).cause).toBeInstanceOf(RpcTimeoutError);
    expect((error as Error).message).toBe(
      `rpcutil#inventory failed after 3 attempts: rpcutil#inventory: no reply from ${silent} within 100ms`,
    );
    expect(attempts.map((a) => [a.attempt, a.error instanceof RpcTimeoutError])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    expect(failures).toHaveLength(1);
    expect(world.client.pending).toBe(0);
    world.fleet.unsilence([silent]);
  });

  it('is cancelled by an AbortSignal, and by unsubscribing, leaving nothing waiting', async () => {
    const [silent] = world.fleet.silence(['node-4.example.net']);
    const controller = new AbortController();
    const pending = failureOf(firstValueFrom(world.client.call(PROVISION_RPCS.inventory, silent, {}, { signal: controller.signal })));
    expect(world.client.pending).toBe(1);
    controller.abort(new Error('shutting down'));
    const error = await pending;
    expect(error).toBeInstanceOf(RpcAbortedError);
    expect((error as Error).message).toBe('rpcutil#inventory was aborted: shutting down');
    const subscription = world.client.call(PROVISION_RPCS.inventory, silent, {}).subscribe();
    expect(world.client.pending).toBe(1);
    subscription.unsubscribe();
    expect(world.client.pending).toBe(0);
    world.fleet.unsilence();
  });

  it('hears at once that nobody serves a subject (no responders), instead of waiting out the timeout', async () => {
    const nowhere = world.newClient({ collective: 'nobody_listens_here' });
    const error = await failureOf(firstValueFrom(nowhere.request(N1, 'rpcutil', 'inventory', {}, { timeoutMs: 60_000 })));
    expect(error).toBeInstanceOf(NoRespondersError);
  });

  it('signs the nonce with the key gen25519 returns', async () => {
    const nonce = newRequestId();
    const reply = await firstValueFrom(world.client.call(PROVISION_RPCS.gen25519, 'node-2.example.net', { nonce, token: 's3cret' }));
    const publicKey = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(reply.data.public_key, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    expect(verify(null, Buffer.from(nonce), publicKey, Buffer.from(reply.data.signature, 'hex'))).toBe(true);
    expect(reply.data.directory).toBe('/etc/choria');
  });

  it('gets a real CSR for the identity from gencsr', async () => {
    const reply = await firstValueFrom(
      world.client.call(PROVISION_RPCS.gencsr, 'node-3.example.net', { token: 's3cret', cn: 'node-3.example.net' }),
    );
    const csr = new x509.Pkcs10CertificateRequest(reply.data.csr);
    expect(csr.subject).toBe('CN=node-3.example.net');
    expect(await csr.verify()).toBe(true);
    expect(reply.data.public_key).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(createPublicKey({ key: reply.data.public_key.replace(/PUBLIC KEY/g, 'RSA PUBLIC KEY'), format: 'pem' }).asymmetricKeyType).toBe(
      'rsa',
    );
    expect(reply.data.ssldir).toBe('/etc/choria/ssl');
  });

  describe('against a node that answers badly (DECISIONS P18: counted and skipped, never the end of the attempt)', () => {
    let rogue: Awaited<ReturnType<typeof openNatsConnection>>;
    let client: ChoriaRpcClient;
    /** What the rogue node answers to each request, in turn: every string of one entry is published. */
    const answers: ((replyTo: string, requestId: string) => string[])[] = [];
    const ROGUE = 'rogue.example.net';
    const reply = (id: string, data: object, sender = ROGUE, agent = 'rpcutil'): string =>
      encodeReply(
        { requestId: id, senderId: sender, agent, time: Date.now(), payload: encodeAgentReply({ statuscode: 0, statusmsg: 'OK', data }) },
        'v1',
      );
    const wrongHash = (id: string): string => {
      const good = JSON.parse(reply(id, {}));
      const secure = JSON.parse(Buffer.from(good.data, 'base64').toString());
      secure.message = secure.message.replace('rpcutil', 'rpcutiL');
      return JSON.stringify({ ...good, data: Buffer.from(JSON.stringify(secure)).toString('base64') });
    };

    beforeAll(async () => {
      rogue = await openNatsConnection({ servers: [server().url] });
      rogue.nc.subscribe(`provisioning.node.${ROGUE}`, {
        callback: (_e, msg) => {
          const request = decodeRequest(msg.data);
          if (!request.ok) return;
          const answer = answers.shift();
          for (const text of answer?.(request.value.replyTo, request.value.requestId) ?? []) rogue.nc.publish(request.value.replyTo, text);
        },
      });
      await rogue.nc.flush();
      client = world.newClient({ identity: 'picky.example.net' });
    });
    afterAll(() => rogue.drain());

    it.each<[string, (id: string) => string, string]>([
      ['not JSON', () => 'this is not json', 'not_json'],
      ['a hash that does not match its body', (id) => wrongHash(id), 'hash'],
      ['another request id', () => reply(newRequestId(), {}), 'schema'],
      // Refused on its first bytes past the envelope's bounds, never built (issue 37).
      [
        'data nested 150,000 arrays deep',
        () => `{"protocol":"choria:transport:1","data":${'['.repeat(150_000)}${']'.repeat(150_000)},"headers":{}}`,
        'oversized',
      ],
    ])('skips a reply with %s, counts it, and takes the real reply that follows', async (_what, junk, reason) => {
      const before = client.badMessages.count('reply', reason as never);
      answers.push((_to, id) => [junk(id), junk(id), reply(id, { version: '1.2.3' })]);
      const answer = await firstValueFrom(client.call(PROVISION_RPCS.inventory, ROGUE, {}));
      expect(answer.data.version).toBe('1.2.3');
      expect(client.badMessages.count('reply', reason as never)).toBe(before + 2);
    });

    it('skips a reply from another node than the one asked (a stranger), counting it', async () => {
      answers.push((_to, id) => [reply(id, { version: '6.6.6' }, 'intruder.example.net'), reply(id, { version: '1.0.0' })]);
      const answer = await firstValueFrom(client.call(PROVISION_RPCS.inventory, ROGUE, {}));
      expect(answer).toMatchObject({ sender: ROGUE, data: { version: '1.0.0' } });
      expect(client.badMessages.count('reply', 'stranger')).toBe(1);
    });

    it('skips reply data that does not fit the action, and the attempt times out naming what it skipped', async () => {
      answers.push((_to, id) => [reply(id, { jwt: 42, ecdh_public: '' }, ROGUE, 'choria_provision')]);
      const error = await failureOf(firstValueFrom(client.call(PROVISION_RPCS.jwt, ROGUE, { token: 'x' }, { timeoutMs: 300 })));
      expect(error).toBeInstanceOf(RpcTimeoutError);
      expect(error).toMatchObject({ refused: 1 });
      expect((error as Error).message).toBe(
        `choria_provision#jwt: no reply from ${ROGUE} within 300ms (1 malformed or foreign reply skipped)`,
      );
      expect(client.badMessages.count('reply', 'payload')).toBe(1);
    });

    it("fills the DDL's output defaults as upstream's generated client: a 0.22 server's edch_public reply and an empty jwt are answers", async () => {
      // Servers before 0.23 sent `edch_public`: ecdh_public reads as "", as upstream reads it.
      answers.push((_to, id) => [reply(id, { jwt: 'a.b.c', edch_public: 'ab'.repeat(32) }, ROGUE, 'choria_provision')]);
      const old = await firstValueFrom(client.call(PROVISION_RPCS.jwt, ROGUE, { token: 'x' }, { timeoutMs: 2000 }));
      expect(old.data).toMatchObject({ jwt: 'a.b.c', ecdh_public: '' });
      // An empty jwt is an answer (the cycle then fails with "no JWT received"), not a malformed reply to wait past.
      const before = client.badMessages.count('reply', 'payload');
      answers.push((_to, id) => [reply(id, {}, ROGUE, 'choria_provision')]);
      const empty = await firstValueFrom(client.call(PROVISION_RPCS.jwt, ROGUE, { token: 'x' }, { timeoutMs: 2000 }));
      expect(empty.data).toEqual({ jwt: '', ecdh_public: '' });
      expect(client.badMessages.count('reply', 'payload')).toBe(before);
    });

    it('still ends the attempt on a real answer with a non-zero status', async () => {
      answers.push((_to, id) => [
        'junk first',
        encodeReply(
          {
            requestId: id,
            senderId: ROGUE,
            agent: 'rpcutil',
            time: Date.now(),
            payload: encodeAgentReply({ statuscode: 4, statusmsg: 'bad input', data: {} }),
          },
          'v1',
        ),
      ]);
      const error = await failureOf(firstValueFrom(client.call(PROVISION_RPCS.inventory, ROGUE, {})));
      expect(error).toBeInstanceOf(RpcStatusError);
      expect((error as Error).message).toBe(`invalid response from ${ROGUE}: bad input (4)`);
    });

    it('counts a reply for a request nobody waits for (unsolicited), without failing anything', async () => {
      const before = client.badMessages.count('reply', 'unsolicited');
      // The client's own inbox: a reply to a request id that is not (or no longer) waited for.
      const inbox = `provisioning.reply.${md5Hex(client.callerId)}.${newRequestId()}`;
      rogue.nc.publish(inbox, reply(newRequestId(), {}));
      await rogue.nc.flush();
      await waitFor(() => client.badMessages.count('reply', 'unsolicited') === before + 1, 'the unsolicited reply to be counted', 5000);
      expect(client.pending).toBe(0);
    });
  });

  describe('a node flooding every request with junk answers first', () => {
    it('slows nobody: every call answers with the real reply, and the junk is counted', async () => {
      const hostile = await openNatsConnection({ servers: [server().url] });
      let junk = 0;
      hostile.nc.subscribe('provisioning.node.>', {
        callback: (_e, msg) => {
          const request = decodeRequest(msg.data);
          if (!request.ok) return;
          junk++;
          hostile.nc.publish(request.value.replyTo, '{"protocol":"choria:transport:1","data":"!!!"}');
        },
      });
      await hostile.nc.flush();
      const slowFleet = await startChoriaWorld(server().url, {
        nodes: 8,
        token: 's3cret',
        latencyMs: 30,
        identity: (i) => `slow-${i}.example.net`,
      });
      try {
        const started = Date.now();
        const replies = await Promise.all(
          slowFleet.fleet.identities().map((id) => firstValueFrom(slowFleet.client.call(PROVISION_RPCS.inventory, id, {}))),
        );
        expect(replies.map((r) => r.sender)).toEqual(slowFleet.fleet.identities());
        expect(Date.now() - started).toBeLessThan(3000);
        expect(slowFleet.client.badMessages.count('reply')).toBe(junk);
        expect(junk).toBe(8);
      } finally {
        await slowFleet.stop();
        await hostile.drain();
      }
    });
  });

  describe('when the broker goes away and comes back', () => {
    it('sends the attempts waiting across the outage again at once instead of waiting out their timeout', async () => {
      const own = await startNatsServer({ jetstream: false });
      let received = 0;
      const outage = await startChoriaWorld(own.url, { nodes: 2, token: 's3cret', latencyMs: 400, onRequest: () => void received++ });
      try {
        const client = outage.newClient({ connection: outage.clientConnection.state$ });
        const attempts: AttemptRecord[] = [];
        const started = Date.now();
        const call = lastValueFrom(
          retryRpc(({ signal }) => client.call(PROVISION_RPCS.inventory, N1, {}, { signal, timeoutMs: 60_000 }), {
            rpc: 'rpcutil#inventory',
            // The node's own connection comes back up to one reconnect wait (2 s) after the client's,
            // and until it does a request finds nobody listening: the ladder outlasts that.
            tries: 12,
            backoffMs: [250, 500, 1000],
            onAttempt: (r) => attempts.push(r),
          }),
        );
        // The node has the request and answers in 400 ms: its reply is lost with the broker.
        await waitFor(() => received === 1, 'the node to receive the request', 5000);
        await own.kill();
        await new Promise((r) => setTimeout(r, 1500));
        await own.restart();
        const reply = await call;
        expect(reply.sender).toBe(N1);
        expect(attempts[0].error).toBeInstanceOf(RpcConnectionLostError);
        expect((attempts[0].error as Error).message).toBe(
          `rpcutil#inventory: the connection to the broker was lost while waiting for the reply from ${N1}`,
        );
        expect(attempts.at(-1)?.error).toBeUndefined();
        // Well within the one attempt's 60 s, which is what it would have waited.
        expect(Date.now() - started).toBeLessThan(30_000);
        expect(client.pending).toBe(0);
      } finally {
        await outage.stop();
        await own.stop();
      }
    });
  });
});
