import { chmodSync } from 'node:fs';
import { SiteDir, siteDir } from '../helpers/choriaSite';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';

// Servers before go-choria 0.23 answer `jwt` with `edch_public` (a misspelling fixed in 0.23).
// Upstream's generated client fills the DDL's default ("") for the missing `ecdh_public`, so such a
// server is provisioned as long as no private key has to be encrypted for it; so is it by rxfleet.
describe('rxfleet provision and servers before 0.23 (rxfleet simulate --server-version 0.22.0)', () => {
  const server = useNatsServer({ jetstream: false });
  let site: SiteDir;
  const running: RxfleetProcess[] = [];
  beforeAll(() => {
    site = siteDir('rxfleet-old-servers-');
  });
  afterEach(() => killAll(running.splice(0)));
  afterAll(() => site.remove());

  const fleet = async (name: string, extra: string[] = []): Promise<{ simulate: RxfleetProcess; keyFile: string }> => {
    const keyFile = `${site.path}/${name}-jwt.key`;
    const simulate = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      '2',
      '--name-prefix',
      name,
      '--token',
      'tok-old',
      '--server-version',
      '0.22.0',
      '--restart-delay',
      '100ms',
      '--jwt-public-key-out',
      keyFile,
      '--json',
      '--trace',
      ...extra,
    ]);
    running.push(simulate);
    await simulate.next((l) => l.type === 'ready');
    return { simulate, keyFile };
  };
  const provision = (name: string, keyFile: string, helper: string): RxfleetProcess => {
    const config = site.file(
      `${name}.yaml`,
      [`helper: ${helper}`, 'token: tok-old', 'choria_insecure: true', 'features: {jwt: true}', `jwt_verify_cert: ${keyFile}`].join('\n'),
    );
    const choria = site.file(`${name}.cfg`, ['identity = prov.example.net', `plugin.choria.middleware_hosts = ${server().url}`].join('\n'));
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria, '--debug']);
    running.push(provisioner);
    return provisioner;
  };

  it('provisions them when no private key is sent, each jwt asked once', async () => {
    const { simulate, keyFile } = await fleet('old', ['--exit-when-provisioned', '--report-every', '0']);
    provision('old', keyFile, MINIMAL_HELPER);
    expect((await simulate.exited).code).toBe(0);
    expect(simulate.lines.find((l) => l.type === 'summary')).toMatchObject({ nodes: 2, provisioned: 2 });
    const jwtRequests = simulate.lines.filter((l) => l.type === 'request' && l.action === 'jwt');
    expect(jwtRequests).toHaveLength(2);
  }, 60_000);

  it("fails a node at once when the helper returns a private key, with upstream's message", async () => {
    const helper = site.file(
      'key-helper.mjs',
      [
        '#!/usr/bin/env node',
        "let input = '';",
        "process.stdin.on('data', (c) => (input += c)).on('end', () => {",
        '  const request = JSON.parse(input);',
        "  const key = '-----BEGIN RSA PRIVATE KEY-----\\nAAAA\\n-----END RSA PRIVATE KEY-----\\n';",
        "  process.stdout.write(JSON.stringify({ defer: false, configuration: { identity: request.identity, 'plugin.choria.server.provision': 'false' }, key }));",
        '});',
      ].join('\n'),
    );
    chmodSync(helper, 0o755);
    const { simulate, keyFile } = await fleet('keyed', ['--report-every', '0']);
    const provisioner = provision('keyed', keyFile, helper);
    const failed = await provisioner.next((l) => /did not start Diffie-Hellman exchange/.test(String(l.msg)));
    expect(String(failed.msg)).toContain('private key received from helper but server did not start Diffie-Hellman exchange');
    // Nothing was configured on it.
    expect(simulate.lines.some((l) => l.type === 'request' && l.action === 'configure')).toBe(false);
  }, 60_000);
});
