import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { parseChoriaClientConfig } from '../../../lib/choria/clientConfig';
import { ClientTokenError, readClientToken } from '../../../lib/choria/clientToken';
import { DurationSyntaxError, parseChoriaDuration } from '../../../lib/choria/duration';
import { parseLifecycleEvent } from '../../../lib/choria/lifecycle';
import { decodeReply, decodeRequest } from '../../../lib/choria/protocol/codec';
import { decodeAgentReply, decodeAgentRequest } from '../../../lib/choria/protocol/mcorpc';
import { judgeReply } from '../../../lib/choria/replyCheck';
import { PROVISION_RPCS } from '../../../lib/choria/agents';
import { coldStoreProblem, modelFromSnapshot } from '../../../lib/enricher/coldStore/coldStoreDocument';
import { EnricherConfigError, parseEnricherConfig } from '../../../lib/enricher/config/config';
import { decodeLifecycle } from '../../../lib/incus/decodeLifecycle';
import { parseResourceUrl } from '../../../lib/incus/resourceUrl';
import { CertDenyList } from '../../../lib/provision/credentials/certDenyList';
import { parseProvisionerConfig } from '../../../lib/provision/config/config';
import { CsrValidationError, validateCsr } from '../../../lib/provision/credentials/csrValidation';
import { Gen25519ReplyError, validateGen25519Reply } from '../../../lib/provision/credentials/gen25519Reply';
import { HelperCommandError, splitHelperCommand } from '../../../lib/provision/helper/helperCommand';
import { HelperOutputError, decodeHelperResponse } from '../../../lib/provision/helper/helperResponse';
import { JwtValidationError, verifyProvisioningJwt } from '../../../lib/provision/credentials/provisioningJwt';
import { parseRpmVersion } from '../../../lib/provision/upgrade/rpmVersion';
import { readEnricherConfigText } from '../../../bin/enrich/commandLine';
import { choriaSeeds, mutateChoria } from './choriaMessages';
import { SECRET, choriaConfig, enricherYaml, provisionerYaml } from './configs';
import { mutateJson, mutateJsonText, mutateText, oddValue } from './mutate';
import { Rng } from './random';
import { createFleetKeys } from '../../../lib/simulate/fleetKeys';

/** One decoder or configuration reader under fuzz, and the contract it keeps with bad input. */
export interface FuzzTarget {
  name: string;
  /** Makes one input from the input's own seeded choices. */
  input(rng: Rng): string;
  /** Feeds it; returns what the target returned (awaited). */
  run(input: string): unknown;
  /** Whether a thrown error is one the target documents (anything else is an untyped error: a defect). */
  typed(error: unknown): boolean;
  /** A defect in what it returned (a secret echoed), or undefined. */
  check?(result: unknown): string | undefined;
}

const never = (): boolean => false;
const leaked = (result: unknown): string | undefined =>
  JSON.stringify(result ?? null).includes(SECRET) ? 'a problem line holds the secret' : undefined;
const pickSeed = (rng: Rng, seeds: string[]): string => rng.pick(seeds);

const INCUS_FRAME =
  '{"type":"lifecycle","timestamp":"2026-11-29T10:11:26.343811125Z","metadata":{"action":"instance-started","source":"/1.0/instances/ev1?project=p2","context":{"name":"ev1"},"requestor":{"username":"root","protocol":"unix","address":"@"},"project":"p2"},"location":"none","project":"p2"}';
const HELPER_OUTPUT = JSON.stringify({
  defer: false,
  msg: 'ok',
  certificate: '',
  ca: '',
  ssldir: '',
  configuration: { 'plugin.choria.server.provision': 'false' },
  action_policies: { 'a.policy': 'x' },
  opa_policies: {},
  server_claims: { exp: 2_000_000_000, ou: 'choria', collectives: ['c'], permissions: { streams: true } },
  upgrade: '0.30.0',
});
const COLD_STORE = JSON.stringify({
  version: 1,
  projects: {
    default: {
      config: {},
      networks: { br0: { name: 'br0', project: 'default', managed: true, type: 'bridge', ipv4: '10.0.0.1/24', ipv6: '' } },
      instances: {
        w1: {
          type: 'container',
          status: 'Running',
          running: true,
          location: 'none',
          profiles: ['default'],
          config: { 'user.role': 'web' },
          interfaces: [{ name: 'eth0', device: 'eth0', project: 'default', network: 'br0', managed: true, ipv4: ['10.0.0.5'], ipv6: [] }],
        },
      },
    },
  },
});

/** Every decoder of untrusted bytes and every configuration reader, with their seeds and contracts. */
export async function fuzzTargets(): Promise<FuzzTarget[]> {
  const seeds = choriaSeeds();
  const ed = generateKeyPairSync('ed25519');
  const jwtKey = { type: 'ed25519' as const, key: createPublicKey(ed.publicKey.export({ format: 'pem', type: 'spki' })) };
  const claims = {
    purpose: 'choria_provisioning',
    cht: 'tok',
    chs: false,
    chu: 'nats://b:4222',
    chpd: true,
    ou: 'choria',
    iss: 'x',
    exp: 4_000_000_000,
    iat: 1_000_000_000,
  };
  // Signed by hand, so any body (not only an object) can be signed and reach the checks behind the signature.
  const b64url = (text: string): string => Buffer.from(text).toString('base64url');
  const signed = (body: unknown): string => {
    const head = `${b64url('{"alg":"EdDSA","typ":"JWT"}')}.${b64url(JSON.stringify(body) ?? 'null')}`;
    return `${head}.${sign(null, Buffer.from(head), ed.privateKey).toString('base64url')}`;
  };
  const jwtSeeds = [signed(claims)];
  const r = new Rng(7);
  for (let i = 0; i < 200; i++) jwtSeeds.push(signed(mutateJson(r, claims)));
  const clientClaims = { purpose: 'choria_client_id', callerid: 'up=provisioner', exp: 4_000_000_000, permissions: { provisioner: true } };
  const clientSeeds = [signed(clientClaims)];
  for (let i = 0; i < 200; i++) clientSeeds.push(signed(mutateJson(r, clientClaims)));
  const denyList = new CertDenyList();
  // Real answers, so that mutations reach past the first check.
  const keys = await createFleetKeys({ claims: { token: 'tok' } });
  const csrs = [await keys.csr('n1.example.net'), await keys.csr('admin.mcollective')];
  const edKey = keys.ed25519();
  const nonce = 'ef'.repeat(16);
  const gen25519 = { public_key: edKey.publicKeyHex, signature: edKey.signHex(nonce), directory: '/etc/choria' };

  return [
    {
      name: 'choria request (decodeRequest)',
      input: (rng) => mutateChoria(rng, pickSeed(rng, seeds.requests)),
      run: (text) => decodeRequest(text),
      typed: never,
    },
    {
      name: 'choria reply (decodeReply)',
      input: (rng) => mutateChoria(rng, pickSeed(rng, seeds.replies)),
      run: (text) => decodeReply(text),
      typed: never,
    },
    {
      name: "reply on an attempt's subject (judgeReply)",
      input: (rng) => mutateChoria(rng, pickSeed(rng, seeds.replies)),
      run: (text) =>
        judgeReply(text, {
          rpc: 'rpcutil#inventory',
          identity: 'n1.example.net',
          requestId: 'a'.repeat(32),
          maxBytes: 1024 * 1024,
          validate: PROVISION_RPCS.inventory.validate,
        }),
      typed: never,
    },
    {
      name: 'agent request payload (decodeAgentRequest)',
      input: (rng) => mutateJsonText(rng, '{"agent":"rpcutil","action":"inventory","data":{}}'),
      run: (text) => decodeAgentRequest(text),
      typed: never,
    },
    {
      name: 'agent reply payload (decodeAgentReply)',
      input: (rng) => mutateJsonText(rng, '{"statuscode":0,"statusmsg":"OK","data":{"a":1}}'),
      run: (text) => decodeAgentReply(text),
      typed: never,
    },
    {
      name: 'choria lifecycle event (parseLifecycleEvent)',
      input: (rng) => mutateJsonText(rng, pickSeed(rng, seeds.lifecycle)),
      run: (text) => parseLifecycleEvent(text),
      typed: never,
    },
    {
      name: 'incus event frame (decodeLifecycle)',
      input: (rng) => mutateJsonText(rng, INCUS_FRAME),
      run: (text) => decodeLifecycle(text),
      typed: never,
    },
    {
      name: 'incus resource url (parseResourceUrl)',
      input: (rng) => mutateText(rng, '/1.0/instances/c%201?project=p2'),
      run: (text) => parseResourceUrl(text),
      typed: never,
    },
    {
      name: 'helper output (decodeHelperResponse)',
      input: (rng) => mutateJsonText(rng, HELPER_OUTPUT),
      run: (text) => decodeHelperResponse(text),
      typed: (e) => e instanceof HelperOutputError,
    },
    {
      name: 'helper command (splitHelperCommand)',
      input: (rng) => mutateText(rng, `/usr/bin/helper --a 'b c' "d\\"e" f\\ g`),
      run: (text) => splitHelperCommand(text),
      typed: (e) => e instanceof HelperCommandError,
    },
    {
      name: 'gen25519 reply (validateGen25519Reply)',
      input: (rng) => (rng.bool(0.1) ? JSON.stringify(gen25519) : JSON.stringify(mutateJson(rng, gen25519))),
      run: (text) => validateGen25519Reply(JSON.parse(text), nonce),
      typed: (e) => e instanceof Gen25519ReplyError,
    },
    {
      name: 'gencsr reply (validateCsr)',
      input: (rng) => {
        const { csr, publicKey } = rng.pick(csrs);
        const reply = { csr: rng.bool(0.5) ? csr : mutateText(rng, csr), public_key: publicKey, ssldir: '/etc/choria/ssl' };
        return JSON.stringify(rng.bool(0.3) ? mutateJson(rng, reply) : reply);
      },
      run: (text) => validateCsr(JSON.parse(text), 'n1.example.net', denyList),
      typed: (e) => e instanceof CsrValidationError,
    },
    {
      name: 'provisioning JWT (verifyProvisioningJwt)',
      input: (rng) => (rng.bool(0.5) ? rng.pick(jwtSeeds) : mutateText(rng, rng.pick(jwtSeeds))),
      run: (text) => verifyProvisioningJwt(text, jwtKey),
      typed: (e) => e instanceof JwtValidationError,
    },
    {
      name: 'client JWT (readClientToken)',
      input: (rng) => (rng.bool(0.5) ? rng.pick(clientSeeds) : mutateText(rng, rng.pick(clientSeeds))),
      run: (text) => readClientToken(text),
      typed: (e) => e instanceof ClientTokenError,
    },
    {
      name: 'choria duration (parseChoriaDuration)',
      input: (rng) => mutateText(rng, rng.pick(['1m', '1h30m', '7d', '1y', '90s', '1.5h'])),
      run: (text) => parseChoriaDuration(text),
      typed: (e) => e instanceof DurationSyntaxError,
    },
    {
      name: 'rpm version (parseRpmVersion)',
      input: (rng) => mutateText(rng, '1:0.29.4-1.el8'),
      run: (text) => parseRpmVersion(text),
      typed: never,
    },
    {
      name: 'enricher cold store (coldStoreProblem, modelFromSnapshot)',
      input: (rng) => mutateJsonText(rng, COLD_STORE),
      run: (text) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          return 'not JSON';
        }
        const problem = coldStoreProblem(parsed);
        return problem ?? modelFromSnapshot(parsed as never).dirty;
      },
      typed: never,
    },
    {
      name: 'provisioner configuration (parseProvisionerConfig)',
      input: (rng) => provisionerYaml(rng),
      run: (text) => parseProvisionerConfig(text, { file: 'fuzz.yaml', cpus: 2 }).problems,
      typed: never,
      check: leaked,
    },
    // A text mutation may move the secret under another key, whose value may be shown: no leak check.
    {
      name: 'provisioner configuration, mutated text (parseProvisionerConfig)',
      input: (rng) => mutateText(rng, provisionerYaml(rng)),
      run: (text) => parseProvisionerConfig(text, { file: 'fuzz.yaml', cpus: 2 }).problems,
      typed: never,
    },
    {
      name: 'choria client configuration (parseChoriaClientConfig)',
      input: (rng) => choriaConfig(rng),
      run: (text) => parseChoriaClientConfig(text, { file: 'fuzz.cfg', defaultIdentity: 'fuzz' }).problems,
      typed: never,
      check: leaked,
    },
    {
      name: 'enricher configuration (readEnricherConfigText, parseEnricherConfig)',
      input: (rng) => enricherYaml(rng),
      run: (text) => {
        const read = readEnricherConfigText(text, 'fuzz.yaml');
        if (read.problems.length > 0) return read.problems;
        try {
          return parseEnricherConfig(read.raw).warnings;
        } catch (error) {
          if (error instanceof EnricherConfigError) return error.problems;
          throw error;
        }
      },
      typed: never,
      check: leaked,
    },
    {
      name: 'any JSON value as an enricher configuration (parseEnricherConfig)',
      input: (rng) => JSON.stringify(oddValue(rng)) ?? 'null',
      run: (text) => parseEnricherConfig(JSON.parse(text)),
      typed: (e) => e instanceof EnricherConfigError,
    },
  ];
}
