import { accessSync, constants, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildHelperInput } from '../../../../lib/provision/helper/helperInput';
import { HelperRunner } from '../../../../streams/helper/helperRunner';
import { sampleHelperPath } from '../../../../bin/sampleHelpers';
import { buildServerClaims } from '../../../../lib/provision/credentials/serverJwt';

const MINIMAL = resolve(__dirname, '../../../../examples/helpers/minimal-helper.mjs');
const ED25519 = resolve(__dirname, '../../../../examples/helpers/ed25519-helper.mjs');
const ISSUER = 'e72cba5268b34627b75c5ceae9449ad16d62f15f862c30d4e0e7d2588e2e6259';
const NODE_KEY = '2ddc906446a935aefde69ceee2beb3b1d85f264153720d9a752aa88771c0594c';

describe('the sample helpers in examples/helpers', () => {
  it.each([MINIMAL, ED25519])('%s is an executable script with a node shebang', (path) => {
    expect(() => accessSync(path, constants.X_OK)).not.toThrow();
    expect(readFileSync(path, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  describe('minimal-helper', () => {
    it('configures the node out of provisioning mode, with the brokers and upgrade from its environment', async () => {
      const runner = new HelperRunner({
        command: MINIMAL,
        env: { ...process.env, RXFLEET_HELPER_BROKERS: 'nats://b1:4222,nats://b2:4222', RXFLEET_HELPER_UPGRADE: '0.29.1' },
      });
      const response = await runner.run(buildHelperInput({ identity: 'n1.example.net', inventory: { version: '0.29.0' } }));
      expect(response).toMatchObject({ defer: false, shutdown: false, msg: 'configured n1.example.net', upgrade: '0.29.1' });
      expect(response.configuration).toEqual({
        identity: 'n1.example.net',
        'plugin.choria.server.provision': 'false',
        'plugin.choria.middleware_hosts': 'nats://b1:4222,nats://b2:4222',
        loglevel: 'info',
      });
    });

    it('defers a request it cannot use', async () => {
      const response = await new HelperRunner({ command: MINIMAL }).run('not json');
      expect(response.defer).toBe(true);
      expect(response.msg).toMatch(/^could not read the request: /);
      expect((await new HelperRunner({ command: MINIMAL }).run(buildHelperInput({ identity: '' }))).defer).toBe(true);
    });
  });

  describe('ed25519-helper', () => {
    const input = buildHelperInput({
      identity: 'n1.example.net',
      ed25519: { public_key: NODE_KEY, directory: '/etc/choria', signature: 'ab' },
      inventory: { version: '0.29.0', upgradable: true },
    });

    it('configures the choria security provider and returns server claims the provisioner signs with', async () => {
      const runner = new HelperRunner({
        command: ED25519,
        env: { ...process.env, RXFLEET_HELPER_ISSUER: ISSUER, RXFLEET_HELPER_YEARS: '2' },
      });
      const response = await runner.run(input);
      expect(response.defer).toBe(false);
      expect(response.configuration).toMatchObject({
        identity: 'n1.example.net',
        'plugin.choria.server.provision': 'false',
        'plugin.security.provider': 'choria',
        'plugin.security.issuer.choria.public': ISSUER,
        'plugin.security.choria.token_file': '/etc/choria/server.jwt',
        'plugin.security.choria.seed_file': '/etc/choria/server.seed',
      });
      expect(response.serverClaims?.permissions).toEqual({ streams: true, submission: true });
      // exp is absolute, two years out: the server JWT expires then, not at server_jwt_validity.
      const now = Date.now();
      const claims = buildServerClaims({
        identity: 'n1.example.net',
        ed25519PublicKey: NODE_KEY,
        configuration: response.configuration,
        serverClaims: response.serverClaims,
        defaultValidityMs: 3_600_000 * 24 * 365,
        now: () => now,
      });
      expect(claims.exp).toBe(response.serverClaims?.exp);
      expect(claims.exp - claims.iat).toBeGreaterThan(729 * 24 * 3600);
      expect(claims.collectives).toEqual(['choria']);
    });

    it('defers without the issuer key in its environment', async () => {
      const environment: NodeJS.ProcessEnv = { ...process.env };
      delete environment.RXFLEET_HELPER_ISSUER;
      const response = await new HelperRunner({ command: ED25519, env: environment }).run(input);
      expect(response).toMatchObject({
        defer: true,
        msg: 'RXFLEET_HELPER_ISSUER is not set: the helper needs the Organisation Issuer public key',
      });
    });

    it('defers a request without an ed25519 public key (the ed25519 feature off)', async () => {
      const response = await new HelperRunner({ command: ED25519, env: { ...process.env, RXFLEET_HELPER_ISSUER: ISSUER } }).run(
        buildHelperInput({ identity: 'n1' }),
      );
      expect(response).toMatchObject({ defer: true, msg: 'No ed25519 public key received' });
    });
  });
});

describe('sampleHelperPath', () => {
  it.each(['minimal-helper', 'ed25519-helper'] as const)('finds %s in examples/helpers', (name) => {
    expect(sampleHelperPath(name)).toBe(resolve(__dirname, `../../../../examples/helpers/${name}.mjs`));
  });
});
