import { createPrivateKey } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChoriaSite, startChoriaSite } from '../helpers/goChoria/choriaSite';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

const SERVERS = 5;

/** As go-choria's provider writes its files: readable by the owner and its group only. */
function written(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o640 });
}

// A site on go-choria's `certmanager` security provider, seen outside Kubernetes: the SSL
// directory holds what the provider leaves there once cert-manager has issued its certificate
// (key.pem, the RSA key it made, PKCS#1; csr.pem, the request; cert.pem and ca.pem, the
// CertificateRequest's status.certificate and status.ca), and the cert-manager keys are set as a
// site sets them. rxfleet reads those files as go-choria does (certname: the identity), asks
// Kubernetes nothing, and provisions real servers through a broker that verifies its certificate.
describe('rxfleet provision against real go-choria servers on the certmanager security provider', () => {
  let site: ChoriaSite;
  let sslDir: string;
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    site = await startChoriaSite({
      flow: 'x509',
      servers: SERVERS,
      provisionerSecurity: async (credentials) => {
        sslDir = join(credentials.ca, '..', 'certmanager-ssl');
        mkdirSync(sslDir, { mode: 0o771 });
        const key = createPrivateKey(readFileSync(credentials.provisioner.key!)).export({ format: 'pem', type: 'pkcs1' }) as string;
        written(join(sslDir, 'key.pem'), key);
        written(join(sslDir, 'cert.pem'), readFileSync(credentials.provisioner.cert!, 'utf8'));
        written(join(sslDir, 'ca.pem'), readFileSync(credentials.ca, 'utf8'));
        written(
          join(sslDir, 'csr.pem'),
          '-----BEGIN CERTIFICATE REQUEST-----\n(sent to cert-manager; not read again)\n-----END CERTIFICATE REQUEST-----\n',
        );
        rmSync(credentials.provisioner.key!);
        rmSync(credentials.provisioner.cert!);
        return Promise.resolve([
          'plugin.security.provider = certmanager',
          `plugin.choria.ssldir = ${sslDir}`,
          'plugin.security.certmanager.namespace = choria',
          'plugin.security.certmanager.issuer = choria-ca',
          'plugin.security.certmanager.alt_names = provisioner.choria.svc.cluster.local',
        ]);
      },
    });
  }, 90_000);
  afterAll(async () => {
    await killAll(running.splice(0));
    await site?.stop();
  }, 30_000);

  it('validate says which files start-up will use and the caller, then provision configures every server', async () => {
    const yaml = site.provisionerConfig('provisioner', ['workers: 4', 'site: spec']);
    const env = { ...site.helper.env, MCOLLECTIVE_CERTNAME: undefined };
    const validate = startRxfleet(['validate', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], { env });
    expect((await validate.exited).code).toBe(0);
    expect(validate.stdout().split('\n')[0]).toBe(
      `security provider certmanager: caller choria=provisioner.mcollective, TLS mutual, verified, requests v1, signed with the x509 key; key ${sslDir}/key.pem, certificate ${sslDir}/cert.pem, CA ${sslDir}/ca.pem`,
    );

    const provisioner = startRxfleet(['provision', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], { env });
    running.push(provisioner);
    const security = await provisioner.next((l) => typeof l.msg === 'string' && l.msg.startsWith('security provider'));
    expect(security.msg).toBe(
      'security provider certmanager: caller choria=provisioner.mcollective, TLS mutual, verified, requests v1, signed with the x509 key',
    );
    await waitFor(
      async () => (await site.ping(SERVERS)).length === SERVERS,
      `choria ping to find all ${SERVERS} servers configured`,
      90_000,
    );
    expect(await site.ping(SERVERS)).toEqual([...site.servers.identities].sort());
  }, 150_000);
});
