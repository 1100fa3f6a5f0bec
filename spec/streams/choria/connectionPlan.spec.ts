import { generateKeyPairSync, verify } from 'node:crypto';
import { parseChoriaClientConfig } from '../../../lib/choria/clientConfig';
import { ed25519PublicKeyFromRaw } from '../../../lib/choria/ed25519Keys';
import { parseProvisionerConfig, requireValidConfig } from '../../../lib/provision/config';
import { connectionPlan } from '../../../streams/choria/connectionPlan';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const provisioner = (...lines: string[]) => requireValidConfig(parseProvisionerConfig(['helper: /bin/h', ...lines].join('\n')));
const choria = (...lines: string[]) => parseChoriaClientConfig(['identity = prov.example.net', ...lines].join('\n'), { file: 'choria.cfg' }).config;
const everything = () => true;

describe('connectionPlan', () => {
  it('as upstream: the Choria config\'s brokers, user provisioner with broker_provisioning_password, TLS from the file provider, replies under provisioning.reply, v1', () => {
    const plan = connectionPlan(
      provisioner('broker_provisioning_password: pw-1234'),
      choria('plugin.choria.middleware_hosts = b1:4222, nats://b2:4223', 'plugin.security.file.certificate = /c.pem', 'plugin.security.file.key = /k.pem', 'plugin.security.file.ca = /ca.pem'),
      { exists: everything },
    );
    expect(plan.problems).toEqual([]);
    expect(plan.nats).toEqual({
      servers: ['nats://b1:4222', 'nats://b2:4223'],
      name: 'prov.example.net',
      inboxPrefix: 'provisioning.reply',
      user: 'provisioner',
      password: 'pw-1234',
      tls: { ca: '/ca.pem', cert: '/c.pem', key: '/k.pem' },
    });
    expect(plan.protocol).toEqual({ version: 'v1' });
  });

  it('choria_insecure turns TLS off; the rxfleet section overrides servers, user, password and adds a creds file', () => {
    const plan = connectionPlan(
      provisioner('choria_insecure: true', 'broker_provisioning_password: pw', 'rxfleet: {nats_servers: [x:1], nats_user: u, nats_password: p, nats_credentials: /u.creds}'),
      choria('plugin.choria.middleware_hosts = b1:4222'),
      { exists: everything },
    );
    expect(plan.problems).toEqual([]);
    expect(plan.nats).toEqual({ servers: ['x:1'], name: 'prov.example.net', inboxPrefix: 'provisioning.reply', user: 'u', password: 'p', credentials: '/u.creds' });
  });

  it('reports every problem: no broker, missing TLS files, a missing creds file, an unknown security provider', () => {
    const plan = connectionPlan(provisioner('rxfleet: {nats_credentials: /gone.creds}'), choria('plugin.security.file.ca = /gone-ca.pem'), { exists: () => false });
    expect(plan.problems.map((p) => `${p.severity} ${p.path}: ${p.message}`)).toEqual([
      'error choria.cfg: no NATS servers: set plugin.choria.middleware_hosts here or rxfleet.nats_servers in the provisioner configuration',
      'error rxfleet.nats_credentials: file "/gone.creds" does not exist',
      'error choria.cfg: plugin.security.file.certificate is required for TLS to the broker (or set choria_insecure: true)',
      'error choria.cfg: plugin.security.file.key is required for TLS to the broker (or set choria_insecure: true)',
      'error choria.cfg: plugin.security.file.ca: file "/gone-ca.pem" does not exist',
    ]);
    expect(connectionPlan(provisioner('choria_insecure: true'), choria('plugin.choria.middleware_hosts = b:1', 'plugin.security.provider = pkcs11')).problems.map((p) => p.message)).toEqual([
      'plugin.security.provider "pkcs11" is not supported: use file or choria',
    ]);
  });

  it('the choria security provider speaks protocol v2 with the client JWT, signing with the seed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-plan-'));
    try {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      writeFileSync(join(dir, 'client.jwt'), 'header.claims.signature\n');
      writeFileSync(join(dir, 'client.seed'), privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex'));
      const plan = connectionPlan(
        provisioner(),
        choria('plugin.choria.middleware_hosts = b:4222', 'plugin.security.provider = choria', `plugin.security.choria.token_file = ${join(dir, 'client.jwt')}`, `plugin.security.choria.seed_file = ${join(dir, 'client.seed')}`),
      );
      expect(plan.problems).toEqual([]);
      if (plan.protocol.version !== 'v2') throw new Error('expected v2');
      expect(plan.protocol.security.callerJwt).toBe('header.claims.signature');
      const signature = plan.protocol.security.sign?.(Buffer.from('{"a":1}')) as Uint8Array;
      const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
      expect(verify(null, Buffer.from('{"a":1}'), ed25519PublicKeyFromRaw(raw), signature)).toBe(true);
      expect(plan.nats.tls).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('a seed file that exists but holds no usable seed is a problem on its line, not an exception', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-plan-'));
    try {
      writeFileSync(join(dir, 'client.jwt'), 'header.claims.signature\n');
      writeFileSync(join(dir, 'client.seed'), '');
      const plan = connectionPlan(
        provisioner(),
        choria('plugin.choria.middleware_hosts = b:4222', 'plugin.security.provider = choria', `plugin.security.choria.token_file = ${join(dir, 'client.jwt')}`, `plugin.security.choria.seed_file = ${join(dir, 'client.seed')}`),
      );
      expect(plan.problems).toHaveLength(1);
      expect(plan.problems[0]).toMatchObject({ severity: 'error' });
      expect(JSON.stringify(plan.problems[0])).toContain('plugin.security.choria.seed_file');
      expect(JSON.stringify(plan.problems[0])).toContain('client.seed');
      expect(plan.protocol.version).toBe('v1');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
