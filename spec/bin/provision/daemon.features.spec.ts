import { KeyObject, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, jwtVerify } from 'jose';
import { NodeRecord } from '../../../lib/simulate/simulatedNode';
import { useNatsServer } from '../../helpers/nats';
import { ECHO_HELPER, SAMPLE_HELPERS, TOKEN, WorldOptions, startProvisionerWorld } from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';

// End to end: a real nats-server, the simulated fleet speaking the wire protocol, real helper
// processes, the daemon as `rxfleet provision` assembles it.
describe('every node in provisioning mode is provisioned exactly once and receives the configuration its helper returned', () => {
  const server = useNatsServer();
  let dir: string;
  let seedFile: string;
  let signerPublic: KeyObject;
  let keyFile: string;
  let keyPem: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-features-'));
    const signer = generateKeyPairSync('ed25519');
    signerPublic = signer.publicKey;
    seedFile = join(dir, 'signer.seed');
    writeFileSync(seedFile, signer.privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex'));
    keyFile = join(dir, 'node-key.pem');
    keyPem = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
    writeFileSync(keyFile, keyPem);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** What the minimal sample helper returns for a node. */
  const minimal = (identity: string) => ({
    identity,
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': server().url,
    loglevel: 'info',
  });
  /** What the echo helper returns for a node, given what it was fed. */
  const echo = (identity: string, fed: { csr: boolean; token: string }) => ({
    identity,
    'plugin.choria.server.provision': 'false',
    'test.csr': fed.csr ? 'yes' : 'no',
    'test.ed25519': '',
    'test.token': fed.token,
    'test.version': '0.29.4',
  });

  const cases: Array<[string, () => WorldOptions, (node: NodeRecord) => void | Promise<void>]> = [
    ['no feature', () => ({}), (node) => expect(node.configuration).toEqual(minimal(node.identity))],
    [
      'pki',
      () => ({ yaml: ['features: {pki: true}'], helper: ECHO_HELPER }),
      (node) => {
        expect(node.configuration).toEqual(echo(node.identity, { csr: true, token: '' }));
        expect(node.csr).toContain('BEGIN CERTIFICATE REQUEST');
        expect([node.certificate, node.ca, node.ssldir]).toEqual([`CERTIFICATE for ${node.identity}`, 'CA', '/etc/choria/ssl']);
      },
    ],
    [
      'jwt (and a private key sent encrypted)',
      () => ({
        yaml: (keys) => ['features: {jwt: true}', `jwt_verify_cert: ${keys.jwtVerifyKey}`],
        helper: ECHO_HELPER,
        helperEnv: { ECHO_HELPER_KEY_FILE: keyFile },
      }),
      (node) => {
        expect(node.configuration).toEqual(echo(node.identity, { csr: false, token: TOKEN }));
        expect(node.key?.trim()).toBe(keyPem.trim());
      },
    ],
    [
      'ed25519 and jwt',
      () => ({
        yaml: (keys) => ['features: {jwt: true, ed25519: true}', `jwt_verify_cert: ${keys.jwtVerifyKey}`, `jwt_signing_key: ${seedFile}`],
        helper: join(SAMPLE_HELPERS, 'ed25519-helper.mjs'),
        helperEnv: { RXFLEET_HELPER_ISSUER: 'ab'.repeat(32) },
        fleet: { perNodeKeys: true },
      }),
      async (node) => {
        expect(node.configuration).toMatchObject({
          identity: node.identity,
          'plugin.choria.server.provision': 'false',
          'plugin.security.provider': 'choria',
          'plugin.security.choria.seed_file': '/etc/choria/server.seed',
        });
        expect(decodeJwt(node.serverJwt ?? '')).toMatchObject({
          identity: node.identity,
          public_key: node.ed25519PublicKey,
          purpose: 'choria_server',
          collectives: ['choria'],
          permissions: { streams: true, submission: true },
        });
        // Signed by the configured seed (EdDSA).
        await expect(jwtVerify(node.serverJwt ?? '', signerPublic)).resolves.toBeDefined();
      },
    ],
    [
      'upgrades',
      () => ({
        yaml: ['features: {upgrades: true}', 'upgrades_repository: https://repo.example.net/choria'],
        fleet: { upgradable: true },
        helperEnv: { RXFLEET_HELPER_UPGRADE: '0.30.0' },
      }),
      (node) => {
        expect(node.configuration).toEqual(minimal(node.identity));
        // Upgraded first, then (at the same version) configured once.
        expect([node.upgrades, node.version]).toEqual([['0.30.0'], '0.30.0']);
      },
    ],
  ];

  it.each(cases)('%s', async (_name, options, check) => {
    const world = await startProvisionerWorld(server().url, options());
    try {
      const fleet = world.fleet();
      await waitFor(() => fleet.stats().provisioned === 6, 'six nodes provisioned', 60_000);
      const nodes = fleet.nodes();
      expect(nodes.map((n) => [n.state, n.configured])).toEqual(nodes.map(() => ['provisioned', 1]));
      expect(fleet.stats().duplicates).toBe(0);
      for (const node of nodes) await check(node);
      // P7: an upgrade counts as provisioned too (each node: the upgrade, then the configuration).
      expect(await world.metric('choria_provisioner_provisioned', { site: 'spec' })).toBe(options().fleet?.upgradable ? 12 : 6);
      expect(await world.metric('choria_provisioner_provision_errors', { site: 'spec' })).toBe(0);
    } finally {
      await world.stop();
    }
  });
});
