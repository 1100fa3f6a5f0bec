import { nodeSiteFiles } from '../../../../streams/siteFiles';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Observable } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { ActionSpec } from '../../../../lib/choria/agents';
import {
  NoRespondersError,
  ProvisioningLockError,
  RpcConnectionLostError,
  RpcStatusError,
  RpcTimeoutError,
} from '../../../../lib/choria/errors';
import { decryptPrivateKey, generateX25519KeyPair } from '../../../../lib/choria/keyTransport';
import { decodeJwt } from 'jose';
import { ProvisionerConfig, parseProvisionerConfig, requireValidConfig } from '../../../../lib/provision/config/config';
import { HelperInput } from '../../../../lib/provision/helper/helperInput';
import { HelperResponse } from '../../../../lib/provision/helper/helperResponse';
import { CycleError, CycleMetrics, ProvisionCycle } from '../../../../lib/provision/cycle/provisionCycle';
import { FleetKeys, createFleetKeys } from '../../../../lib/simulate/fleetKeys';

/** What a scripted node answers to one attempt: reply data, an error, or nothing at all (hang). */
type Answer = Record<string, unknown> | Error | 'hang';
type Script = (rpc: string, input: Record<string, unknown>, attempt: number) => Answer;

/** A client whose nodes answer as the script says, recording every attempt in order. */
function scriptedClient(script: Script) {
  const attempts: Array<{ rpc: string; input: Record<string, unknown> }> = [];
  const counts = new Map<string, number>();
  return {
    attempts,
    rpcs: () => attempts.map((a) => a.rpc),
    call<I extends object, O>(
      spec: ActionSpec<I, O>,
      _identity: string,
      input: I,
      options: { signal?: AbortSignal } = {},
    ): Observable<{ data: O; statuscode: number; statusmsg: string }> {
      return new Observable((subscriber) => {
        const n = (counts.get(spec.rpc) ?? 0) + 1;
        counts.set(spec.rpc, n);
        attempts.push({ rpc: spec.rpc, input: input as Record<string, unknown> });
        const answer = script(spec.rpc, input as Record<string, unknown>, n);
        if (answer === 'hang') {
          const onAbort = (): void => subscriber.error(options.signal?.reason);
          options.signal?.addEventListener('abort', onAbort);
          return () => options.signal?.removeEventListener('abort', onAbort);
        }
        if (answer instanceof Error) subscriber.error(answer);
        else {
          subscriber.next({ data: answer as O, statuscode: 0, statusmsg: 'OK' });
          subscriber.complete();
        }
        return undefined;
      });
    },
  };
}

/** Metrics that remember what was counted. */
function recordingMetrics(): CycleMetrics & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    observeRpc: (rpc) => log.push(`time ${rpc}`),
    rpcError: (rpc) => log.push(`error ${rpc}`),
    helperShutdownRequest: () => log.push('shutdown request'),
    lockRefused: () => log.push('lock refused'),
  };
}

const CONFIGURATION = { 'plugin.choria.server.provision': 'false', identity: 'n1.example.net' };
const INVENTORY = { agents: ['choria_provision'], collectives: ['provisioning'], version: '0.29.4', upgradable: true };
const helperReturning = (response: Partial<HelperResponse>, inputs: HelperInput[] = []) => ({
  inputs,
  run: async (input: HelperInput) => {
    inputs.push(input);
    return {
      defer: false,
      shutdown: false,
      msg: '',
      configuration: { ...CONFIGURATION },
      actionPolicies: {},
      opaPolicies: {},
      certificate: '',
      ca: '',
      key: '',
      ssldir: '',
      serverClaims: undefined,
      upgrade: '',
      ...response,
    };
  },
});

/** The happy answers of a node in provisioning mode. */
function node(keys: FleetKeys, overrides: Partial<Record<string, Answer>> = {}, ecdhPublic = ''): Script {
  return (rpc, input) => {
    if (rpc in overrides) return overrides[rpc] as Answer;
    switch (rpc) {
      case 'choria_provision#jwt':
        return { jwt: keys.jwt, ecdh_public: ecdhPublic };
      case 'choria_provision#gen25519': {
        const key = keys.ed25519();
        return { public_key: key.publicKeyHex, directory: '/etc/choria', signature: key.signHex(String(input.nonce)) };
      }
      case 'rpcutil#inventory':
        return { ...INVENTORY };
      default:
        return { message: 'ok' };
    }
  };
}

describe('ProvisionCycle', () => {
  let keys: FleetKeys;
  let dir: string;
  let seedFile: string;
  const fast = { backoffMs: [1], random: () => 0, files: nodeSiteFiles };

  const config = (yaml: string[] = []): ProvisionerConfig =>
    requireValidConfig(parseProvisionerConfig(['helper: /bin/true', 'token: s3cret', ...yaml].join('\n')));

  beforeAll(async () => {
    keys = await createFleetKeys({ claims: { token: 's3cret', allowUpdates: true } });
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-cycle-'));
    seedFile = join(dir, 'signer.seed');
    // Exactly 64 hex characters, no newline, as upstream insists.
    const seed = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex');
    writeFileSync(seedFile, seed);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const sighting = { identity: 'n1.example.net', sightedAt: 0 };
  const clock = () => 0;

  it('with no feature on: inventory, the helper, configure with every field, restart with splay 1; rpc_time for each attempt', async () => {
    const client = scriptedClient(node(keys));
    const helper = helperReturning({});
    const metrics = recordingMetrics();
    const cycle = new ProvisionCycle({ config: config(), client, helper, metrics, clock, ...fast });
    expect(await cycle.run(sighting)).toBe('provisioned');
    expect(client.rpcs()).toEqual(['rpcutil#inventory', 'choria_provision#configure', 'choria_provision#restart']);
    expect(client.attempts[1].input).toEqual({
      config: JSON.stringify(CONFIGURATION),
      token: 's3cret',
      ca: '',
      certificate: '',
      ssldir: '',
      key: '',
      ecdh_public: '',
      action_policies: {},
      opa_policies: {},
      server_jwt: '',
    });
    expect(client.attempts[2].input).toEqual({ token: 's3cret', splay: 1 });
    expect(helper.inputs[0]).toMatchObject({ identity: 'n1.example.net', csr: null, ed25519_pubkey: null, jwt: null });
    // The inventory reply as a JSON string, keys sorted as Go sorts them.
    expect(helper.inputs[0].inventory).toBe(
      '{"agents":["choria_provision"],"collectives":["provisioning"],"upgradable":true,"version":"0.29.4"}',
    );
    expect(metrics.log).toEqual(['time rpcutil#inventory', 'time choria_provision#configure', 'time choria_provision#restart']);
  });

  it('ed25519 (with jwt): jwt, gen25519, inventory, the helper with both, a signed server JWT in configure', async () => {
    const client = scriptedClient(node(keys));
    const helper = helperReturning({
      configuration: { ...CONFIGURATION, 'plugin.security.provider': 'choria' },
      serverClaims: { permissions: { streams: true } },
    });
    const cycle = new ProvisionCycle({
      config: config(['features: {ed25519: true}', `jwt_verify_cert: ${keys.jwtVerifyKey}`, `jwt_signing_key: ${seedFile}`]),
      client,
      helper,
      clock,
      ...fast,
    });
    expect(await cycle.run(sighting)).toBe('provisioned');
    expect(client.rpcs()).toEqual([
      'choria_provision#jwt',
      'choria_provision#gen25519',
      'rpcutil#inventory',
      'choria_provision#configure',
      'choria_provision#restart',
    ]);
    expect(client.attempts[1].input).toMatchObject({ token: 's3cret', nonce: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const input = helper.inputs[0];
    expect(input.jwt).toMatchObject({ cht: 's3cret', purpose: 'choria_provisioning' });
    expect(input.ed25519_pubkey?.public_key).toBe(keys.ed25519().publicKeyHex);
    const serverJwt = String(client.attempts[3].input.server_jwt);
    expect(decodeJwt(serverJwt)).toMatchObject({
      identity: 'n1.example.net',
      collectives: ['choria'],
      purpose: 'choria_server',
      public_key: keys.ed25519().publicKeyHex,
      permissions: { streams: true },
    });
  });

  it('pki: gencsr (one try) with the identity as CN; the CSR reply is handed to the helper and its ssldir wins in configure', async () => {
    const { csr, publicKey } = await keys.csr('n1.example.net');
    const client = scriptedClient(node(keys, { 'choria_provision#gencsr': { csr, public_key: publicKey, ssldir: '/etc/choria/ssl' } }));
    const helper = helperReturning({ certificate: 'CERT', ca: 'CA', ssldir: '/elsewhere' });
    const cycle = new ProvisionCycle({ config: config(['features: {pki: true}']), client, helper, clock, ...fast });
    expect(await cycle.run(sighting)).toBe('provisioned');
    expect(client.attempts.find((a) => a.rpc === 'choria_provision#gencsr')?.input).toEqual({ token: 's3cret', cn: 'n1.example.net' });
    expect(helper.inputs[0].csr?.csr).toBe(csr);
    expect(client.attempts.find((a) => a.rpc === 'choria_provision#configure')?.input).toMatchObject({
      certificate: 'CERT',
      ca: 'CA',
      ssldir: '/etc/choria/ssl',
    });
  });

  it('bad input from the node is a clear error for that node, never a crash (P12): a malformed CSR, a short ed25519 key, a JWT that does not verify', async () => {
    const run = (features: string[], overrides: Record<string, Answer>) =>
      new ProvisionCycle({
        config: config([...features, `jwt_verify_cert: ${keys.jwtVerifyKey}`, `jwt_signing_key: ${seedFile}`]),
        client: scriptedClient(node(keys, overrides)),
        helper: helperReturning({}),
        clock,
        ...fast,
      }).run(sighting);
    await expect(
      run(['features: {pki: true}'], {
        'choria_provision#gencsr': {
          csr: '-----BEGIN CERTIFICATE REQUEST-----\nnot base64!\n-----END CERTIFICATE REQUEST-----\n',
          public_key: '',
          ssldir: '',
        },
      }),
    ).rejects.toMatchObject({
      step: 'gencsr',
      message: expect.stringMatching(/^could not provision n1\.example\.net: could not parse CSR/),
    });
    await expect(
      run(['features: {ed25519: true}'], {
        'choria_provision#gen25519': { public_key: 'abcd', directory: '/etc/choria', signature: 'ab'.repeat(64) },
      }),
    ).rejects.toMatchObject({
      step: 'gen25519',
      message: 'could not fetch ed25519 public key: invalid public key received: 2 bytes, expected 32',
    });
    const other = await createFleetKeys({ claims: { token: 's3cret' } });
    await expect(run(['features: {jwt: true}'], { 'choria_provision#jwt': { jwt: other.jwt, ecdh_public: '' } })).rejects.toMatchObject({
      step: 'jwt',
      message: 'could not validate JWT: n1.example.net: could not parse provisioner token: ed25519: verification error',
    });
  });

  it('an empty jwt fails the node at once with "no JWT received", after one attempt, as upstream', async () => {
    const client = scriptedClient(node(keys, { 'choria_provision#jwt': { jwt: '', ecdh_public: '' } }));
    const run = new ProvisionCycle({
      config: config(['features: {jwt: true}', `jwt_verify_cert: ${keys.jwtVerifyKey}`]),
      client,
      helper: helperReturning({}),
      clock,
      ...fast,
    }).run(sighting);
    await expect(run).rejects.toMatchObject({ step: 'jwt', message: 'could not validate JWT: n1.example.net: no JWT received' });
    expect(client.rpcs()).toEqual(['choria_provision#jwt']);
  });

  it('a CSR for another name or a denied one is refused before the helper runs', async () => {
    for (const [cn, why] of [
      ['other.example.net', 'common name other.example.net does not match identity n1.example.net'],
      ['n1.example.net.choria', 'n1.example.net.choria matches denied certificate pattern'],
    ]) {
      const { csr, publicKey } = await keys.csr(cn);
      const helper = helperReturning({});
      const identity = cn === 'other.example.net' ? 'n1.example.net' : cn;
      const cycle = new ProvisionCycle({
        config: config(['features: {pki: true}']),
        client: scriptedClient(node(keys, { 'choria_provision#gencsr': { csr, public_key: publicKey, ssldir: '' } })),
        helper,
        clock,
        ...fast,
      });
      await expect(cycle.run({ identity, sightedAt: 0 })).rejects.toMatchObject({ message: `could not provision ${identity}: ${why}` });
      expect(helper.inputs).toEqual([]);
    }
  });

  it('a sighting older than twice the interval is refused before any RPC', async () => {
    const client = scriptedClient(node(keys));
    const cycle = new ProvisionCycle({
      config: config(['interval: 1m']),
      client,
      helper: helperReturning({}),
      clock: () => 120_001,
      ...fast,
    });
    await expect(cycle.run(sighting)).rejects.toMatchObject({ step: 'stale', message: "skipping node that's been waiting 2m0.001s" });
    expect(client.attempts).toEqual([]);
  });

  it('each RPC is retried up to its tries; rpc_time per attempt, rpc_errors once per failed call; the error names the action and attempts', async () => {
    const failure = (rpc: string) => new RpcStatusError(rpc, 'n1.example.net', 5, 'simulated failure');
    const flaky = scriptedClient((rpc, input, attempt) =>
      rpc === 'rpcutil#inventory' && attempt < 3
        ? failure(rpc)
        : rpc === 'choria_provision#configure'
          ? failure(rpc)
          : node(keys)(rpc, input, attempt),
    );
    const metrics = recordingMetrics();
    const cycle = new ProvisionCycle({ config: config(), client: flaky, helper: helperReturning({}), metrics, clock, ...fast });
    await expect(cycle.run(sighting)).rejects.toMatchObject({
      step: 'configure',
      message:
        'configuration failed: choria_provision#configure failed after 5 attempts: invalid response from n1.example.net: simulated failure (5)',
    });
    expect(flaky.rpcs()).toEqual([...Array(3).fill('rpcutil#inventory'), ...Array(5).fill('choria_provision#configure')]);
    expect(metrics.log).toEqual([
      ...Array(3).fill('time rpcutil#inventory'),
      ...Array(5).fill('time choria_provision#configure'),
      'error choria_provision#configure',
    ]);
  });

  it('a restart whose reply was lost with the broker, after which the node no longer answers, is provisioned: it restarted', async () => {
    const restart = 'choria_provision#restart';
    const lostThenGone = (gone: Error) =>
      scriptedClient((rpc, input, attempt) =>
        rpc !== restart ? node(keys)(rpc, input, attempt) : attempt === 1 ? new RpcConnectionLostError(restart, 'n1') : gone,
      );
    for (const gone of [new NoRespondersError(restart, 'n1'), new RpcTimeoutError(restart, 'n1', 22_000)]) {
      const client = lostThenGone(gone);
      const metrics = recordingMetrics();
      expect(
        await new ProvisionCycle({ config: config(), client, helper: helperReturning({}), metrics, clock, ...fast }).run(sighting),
      ).toBe('provisioned');
      // Its tries are all spent first (right after the broker's return the node may not be back
      // yet), and then no RPC error is counted.
      expect(client.rpcs().filter((r) => r === restart)).toHaveLength(3);
      expect(metrics.log).not.toContain(`error ${restart}`);
    }
    // Without a lost reply, a node that does not answer its restart is a failure, as upstream.
    const silent = scriptedClient((rpc, input, attempt) =>
      rpc === restart ? new NoRespondersError(restart, 'n1') : node(keys)(rpc, input, attempt),
    );
    await expect(
      new ProvisionCycle({ config: config(), client: silent, helper: helperReturning({}), clock, ...fast }).run(sighting),
    ).rejects.toMatchObject({ step: 'restart' });
    expect(silent.rpcs().filter((r) => r === restart)).toHaveLength(3);
    // A configure whose reply was lost is sent again and its answer taken: not assumed.
    const configure = 'choria_provision#configure';
    const lostConfigure = scriptedClient((rpc, input, attempt) =>
      rpc === configure && attempt === 1
        ? new RpcConnectionLostError(configure, 'n1')
        : rpc === configure
          ? new NoRespondersError(configure, 'n1')
          : node(keys)(rpc, input, attempt),
    );
    await expect(
      new ProvisionCycle({ config: config(), client: lostConfigure, helper: helperReturning({}), clock, ...fast }).run(sighting),
    ).rejects.toMatchObject({ step: 'configure' });
  });

  it('a failure that may leave the node holding its configuration says so: a configure gone unanswered after it may have reached the node, a restart of the configured node gone unanswered', async () => {
    const configure = 'choria_provision#configure';
    const restart = 'choria_provision#restart';
    const status = (rpc: string) => new RpcStatusError(rpc, 'n1.example.net', 5, 'simulated failure');
    const cases: Array<[string, Script, string, boolean]> = [
      // Its first attempt may have been applied (its reply lost with the route), the rest reached nobody.
      [
        'configure timed out, then nothing listening',
        (rpc, input, n) =>
          rpc !== configure
            ? node(keys)(rpc, input, n)
            : n === 1
              ? new RpcTimeoutError(configure, 'n1', 22_000)
              : new NoRespondersError(configure, 'n1'),
        'configure',
        true,
      ],
      [
        'configure reply lost with the connection, then refused',
        (rpc, input, n) =>
          rpc !== configure ? node(keys)(rpc, input, n) : n === 1 ? new RpcConnectionLostError(configure, 'n1') : status(configure),
        'configure',
        true,
      ],
      ['configure never reached the node', node(keys, { [configure]: new NoRespondersError(configure, 'n1') }), 'configure', false],
      ['configure refused', node(keys, { [configure]: status(configure) }), 'configure', false],
      ['restart of the configured node unanswered', node(keys, { [restart]: new NoRespondersError(restart, 'n1') }), 'restart', true],
      ['restart timed out', node(keys, { [restart]: new RpcTimeoutError(restart, 'n1', 22_000) }), 'restart', true],
      ['restart refused', node(keys, { [restart]: status(restart) }), 'restart', false],
      [
        'inventory unanswered',
        node(keys, { 'rpcutil#inventory': new RpcTimeoutError('rpcutil#inventory', 'n1', 4000) }),
        'inventory',
        false,
      ],
    ];
    for (const [what, script, step, mayBeConfigured] of cases) {
      const cycle = new ProvisionCycle({ config: config(), client: scriptedClient(script), helper: helperReturning({}), clock, ...fast });
      const error = await cycle.run(sighting).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect({ what, error }).toMatchObject({ what, error: { step, nodeMayBeConfigured: mayBeConfigured } });
    }
  });

  it('a provisioning-lock refusal ends the cycle as locked: one attempt, counted as a lock refusal, not an RPC error (P10)', async () => {
    const client = scriptedClient(
      node(keys, {
        'choria_provision#jwt': new ProvisioningLockError(
          'choria_provision#jwt',
          'n1.example.net',
          1,
          'Could not obtain provisioning lock',
        ),
      }),
    );
    const metrics = recordingMetrics();
    const cycle = new ProvisionCycle({
      config: config(['features: {jwt: true}', `jwt_verify_cert: ${keys.jwtVerifyKey}`]),
      client,
      helper: helperReturning({}),
      metrics,
      clock,
      ...fast,
    });
    expect(await cycle.run(sighting)).toBe('locked');
    expect(client.rpcs()).toEqual(['choria_provision#jwt']);
    expect(metrics.log).toEqual(['time choria_provision#jwt', 'lock refused']);
  });

  it('paused before a call: nothing is sent; paused during an attempt: it stops there and nothing follows', async () => {
    const gate = new PauseGate(true);
    const idle = scriptedClient(node(keys));
    await expect(
      new ProvisionCycle({ config: config(), client: idle, helper: helperReturning({}), gate, clock, ...fast }).run(sighting),
    ).rejects.toMatchObject({
      message: 'could not provision n1.example.net: provisioning is paused, cannot perform rpcutil#inventory',
    });
    expect(idle.attempts).toEqual([]);

    const open = new PauseGate();
    const hanging = scriptedClient(node(keys, { 'choria_provision#configure': 'hang' }));
    const helper = helperReturning({});
    const run = new ProvisionCycle({ config: config(), client: hanging, helper, gate: open, clock, ...fast }).run(sighting);
    while (!hanging.rpcs().includes('choria_provision#configure')) await new Promise((r) => setImmediate(r));
    open.pause();
    await expect(run).rejects.toMatchObject({
      step: 'configure',
      message: 'configuration failed: provisioning is paused, cannot perform choria_provision#configure',
    });
    expect(hanging.rpcs()).toEqual(['rpcutil#inventory', 'choria_provision#configure']);
  });

  it('the hard stop aborts an attempt in flight at once', async () => {
    const stop = new AbortController();
    const client = scriptedClient(node(keys, { 'rpcutil#inventory': 'hang' }));
    const run = new ProvisionCycle({ config: config(), client, helper: helperReturning({}), clock, ...fast }).run(sighting, stop.signal);
    while (client.attempts.length === 0) await new Promise((r) => setImmediate(r));
    stop.abort(new Error('grace period over'));
    await expect(run).rejects.toMatchObject({ message: expect.stringContaining('rpcutil#inventory was aborted: grace period over') });
    expect(client.attempts).toHaveLength(1);
  });

  it('the helper decides: defer fails the node without configuring it; a helper failure names the helper', async () => {
    const deferClient = scriptedClient(node(keys));
    await expect(
      new ProvisionCycle({
        config: config(),
        client: deferClient,
        helper: helperReturning({ defer: true, msg: 'CA is down' }),
        clock,
        ...fast,
      }).run(sighting),
    ).rejects.toMatchObject({
      step: 'defer',
      message: 'configuration defered: CA is down',
    });
    expect(deferClient.rpcs()).toEqual(['rpcutil#inventory']);
    const broken = {
      run: () => Promise.reject(new Error('could not invoke configure helper: could not wait for /bin/false: exit status 1')),
    };
    await expect(
      new ProvisionCycle({ config: config(), client: scriptedClient(node(keys)), helper: broken, clock, ...fast }).run(sighting),
    ).rejects.toMatchObject({
      step: 'helper',
      message: 'could not invoke configure helper: could not wait for /bin/false: exit status 1',
    });
  });

  it('shutdown: the node is told to stop and counted; a non-OK answer is a warning, not a failure, and not retried', async () => {
    const client = scriptedClient(node(keys));
    const metrics = recordingMetrics();
    expect(
      await new ProvisionCycle({ config: config(), client, helper: helperReturning({ shutdown: true }), metrics, clock, ...fast }).run(
        sighting,
      ),
    ).toBe('shutdown');
    expect(client.rpcs()).toEqual(['rpcutil#inventory', 'choria_provision#shutdown']);
    expect(client.attempts[1].input).toEqual({ token: 's3cret' });
    expect(metrics.log).toContain('shutdown request');

    const refusing = scriptedClient(
      node(keys, {
        'choria_provision#shutdown': new RpcStatusError(
          'choria_provision#shutdown',
          'n1',
          2,
          'Unknown action shutdown for agent choria_provision',
        ),
      }),
    );
    const quiet = recordingMetrics();
    expect(
      await new ProvisionCycle({
        config: config(),
        client: refusing,
        helper: helperReturning({ shutdown: true }),
        metrics: quiet,
        clock,
        ...fast,
      }).run(sighting),
    ).toBe('shutdown');
    expect(refusing.rpcs()).toEqual(['rpcutil#inventory', 'choria_provision#shutdown']);
    expect(quiet.log).not.toContain('shutdown request');
    expect(quiet.log).not.toContain('error choria_provision#shutdown');

    const silent = scriptedClient(node(keys, { 'choria_provision#shutdown': new RpcTimeoutError('choria_provision#shutdown', 'n1', 10) }));
    await expect(
      new ProvisionCycle({ config: config(), client: silent, helper: helperReturning({ shutdown: true }), clock, ...fast }).run(sighting),
    ).rejects.toMatchObject({ step: 'shutdown' });
    expect(silent.rpcs().filter((r) => r === 'choria_provision#shutdown')).toHaveLength(3);
  });

  it('a private key from the helper travels encrypted for the ECDH key of the jwt reply, and only the server can read it', async () => {
    const server = generateX25519KeyPair();
    const pem = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
    const client = scriptedClient(node(keys, {}, server.publicKey.toString('hex')));
    const cycle = new ProvisionCycle({
      config: config(['features: {jwt: true}', `jwt_verify_cert: ${keys.jwtVerifyKey}`]),
      client,
      helper: helperReturning({ key: pem, certificate: 'C', ca: 'A', ssldir: '/s' }),
      clock,
      ...fast,
    });
    expect(await cycle.run(sighting)).toBe('provisioned');
    const configure = client.attempts.find((a) => a.rpc === 'choria_provision#configure')?.input as { key: string; ecdh_public: string };
    expect(configure.key).toContain('DEK-Info: AES-256-CBC,');
    expect(configure.key).not.toContain(pem.split('\n')[1]);
    expect(decryptPrivateKey(configure.key, configure.ecdh_public, server.privateKey).trim()).toBe(pem.trim());

    const noJwt = new ProvisionCycle({
      config: config(),
      client: scriptedClient(node(keys)),
      helper: helperReturning({ key: pem }),
      clock,
      ...fast,
    });
    await expect(noJwt.run(sighting)).rejects.toMatchObject({
      step: 'private_key',
      message: 'private key received from helper but server did not start Diffie-Hellman exchange',
    });
  });

  it('an empty configuration fails without sending configure', async () => {
    const client = scriptedClient(node(keys));
    await expect(
      new ProvisionCycle({ config: config(), client, helper: helperReturning({ configuration: {} }), clock, ...fast }).run(sighting),
    ).rejects.toMatchObject({ message: 'configuration failed: empty configuration' });
    expect(client.rpcs()).toEqual(['rpcutil#inventory']);
  });

  describe('upgrades', () => {
    const upgrades = ['features: {upgrades: true}', 'upgrades_repository: https://repo.example.net/choria'];

    it('a different version is released to the node and the cycle ends upgraded, before configure', async () => {
      const client = scriptedClient(node(keys));
      expect(
        await new ProvisionCycle({ config: config(upgrades), client, helper: helperReturning({ upgrade: '0.30.0' }), clock, ...fast }).run(
          sighting,
        ),
      ).toBe('upgraded');
      expect(client.rpcs()).toEqual(['rpcutil#inventory', 'choria_provision#release_update']);
      expect(client.attempts[1].input).toEqual({ repository: 'https://repo.example.net/choria', token: 's3cret', version: '0.30.0' });
    });

    it('the same version goes on to configure (#188)', async () => {
      const client = scriptedClient(node(keys));
      expect(
        await new ProvisionCycle({ config: config(upgrades), client, helper: helperReturning({ upgrade: '0.29.4' }), clock, ...fast }).run(
          sighting,
        ),
      ).toBe('provisioned');
      expect(client.rpcs()).toEqual(['rpcutil#inventory', 'choria_provision#configure', 'choria_provision#restart']);
    });

    it('a failed update fails the cycle, or with upgrades_optional is a warning and the node is configured', async () => {
      const failing = () =>
        scriptedClient(
          node(keys, {
            'choria_provision#release_update': new RpcStatusError(
              'choria_provision#release_update',
              'n1',
              1,
              'Update to version 0.30.0 failed, release rolled back',
            ),
          }),
        );
      await expect(
        new ProvisionCycle({
          config: config(upgrades),
          client: failing(),
          helper: helperReturning({ upgrade: '0.30.0' }),
          clock,
          ...fast,
        }).run(sighting),
      ).rejects.toMatchObject({
        step: 'upgrade',
        message: expect.stringMatching(/^update to 0\.30\.0 failed: choria_provision#release_update failed after 3 attempts/),
      });
      const optional = failing();
      expect(
        await new ProvisionCycle({
          config: config([...upgrades, 'upgrades_optional: true']),
          client: optional,
          helper: helperReturning({ upgrade: '0.30.0' }),
          clock,
          ...fast,
        }).run(sighting),
      ).toBe('provisioned');
      expect(optional.rpcs().slice(-2)).toEqual(['choria_provision#configure', 'choria_provision#restart']);
    });
  });

  it('every failure is a CycleError naming the node and the step', async () => {
    const client = scriptedClient(
      node(keys, {
        'choria_provision#restart': new RpcStatusError(
          'choria_provision#restart',
          'n1',
          1,
          'Configuration enables provisioning, restart cannot continue',
        ),
      }),
    );
    const error = await new ProvisionCycle({ config: config(), client, helper: helperReturning({}), clock, ...fast })
      .run(sighting)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleError);
    expect(error).toMatchObject({
      identity: 'n1.example.net',
      step: 'restart',
      message: expect.stringMatching(/^restart failed: choria_provision#restart failed after 3 attempts/),
    });
  });
});
