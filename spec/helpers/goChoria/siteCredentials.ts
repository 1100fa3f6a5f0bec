import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SiteDir } from '../choriaSite';
import { createTestCa } from '../testCa';
import { choria } from './choriaCommand';

/**
 * How a site's trust is set up, as go-choria's two security models do it: `x509` (the `file`
 * provider: a CA signs every certificate; provisioning JWTs are signed with an RSA key whose
 * certificate the broker holds as `plugin.choria.network.provisioning.signer_cert`) or `issuer`
 * (an organisation issuer's ed25519 key signs every JWT: the broker's, the provisioner's and
 * operator's client JWTs, the provisioning JWT; TLS certificates only encrypt).
 */
export type SiteFlow = 'x509' | 'issuer';

/** The files a site's parts are configured with, all in the site's directory. */
export interface SiteCredentials {
  flow: SiteFlow;
  ca: string;
  /** The CA's key: what a site's PKI helper signs the nodes' CSRs with. */
  caKey: string;
  broker: { cert: string; key: string };
  /** The provisioner's TLS certificate (x509) or its client JWT and seed (issuer). */
  provisioner: { cert?: string; key?: string; jwt?: string; seed?: string };
  /** An operator's, for `choria ping` and `choria req` once the servers are configured. */
  admin: { cert?: string; key?: string; jwt?: string; seed?: string; identity: string };
  /** x509: the provisioning JWT signer's certificate and key. */
  signer?: { cert: string; key: string };
  /** issuer: the organisation issuer's seed file and hex public key. */
  issuer?: { seed: string; publicKey: string };
  /** The broker's own server JWT and seed (issuer). */
  brokerIdentity?: { jwt: string; seed: string };
}

/** Makes a site's credentials in `site`: a CA and TLS certificates, then the flow's keys and JWTs with `choria jwt`. */
export async function siteCredentials(site: SiteDir, flow: SiteFlow): Promise<SiteCredentials> {
  const testCa = await createTestCa('go-choria spec CA');
  const ca = site.file('ca.pem', testCa.cert);
  const caKey = site.file('ca-key.pem', testCa.key);
  const brokerTls = await testCa.issue('broker.example.net', { dns: ['localhost', 'broker.example.net'], ip: ['127.0.0.1'] });
  const broker = { cert: site.file('broker.pem', brokerTls.cert), key: site.file('broker-key.pem', brokerTls.key) };

  if (flow === 'x509') {
    const issueTo = async (name: string): Promise<{ cert: string; key: string }> => {
      const issued = await testCa.issue(name, { dns: [name] });
      return { cert: site.file(`${name}.pem`, issued.cert), key: site.file(`${name}-key.pem`, issued.key) };
    };
    const signer = await issueTo('provisioning-signer');
    return {
      flow,
      ca,
      caKey,
      broker,
      provisioner: await issueTo('provisioner.mcollective'),
      admin: { ...(await issueTo('admin.mcollective')), identity: 'admin.mcollective' },
      signer,
    };
  }

  const keys = async (name: string): Promise<{ seed: string; publicKey: string }> => {
    const seed = join(site.path, `${name}.seed`);
    const publicKey = join(site.path, `${name}.public`);
    await choria(['jwt', 'keys', seed, publicKey]);
    return { seed, publicKey: readFileSync(publicKey, 'utf8').trim() };
  };
  const issuer = await keys('issuer');
  const provisionerKeys = await keys('provisioner');
  const adminKeys = await keys('admin');
  const brokerKeys = await keys('broker');
  const provisionerJwt = join(site.path, 'provisioner.jwt');
  // The provisioner's client JWT as go-choria's docs make it: it may provision servers, use
  // Streams and elections, and sign the servers' JWTs in a chain (jwt_signing_token).
  await choria([
    'jwt',
    'client',
    provisionerJwt,
    'provisioner.mcollective',
    issuer.seed,
    '--public-key',
    provisionerKeys.publicKey,
    '--server-provisioner',
    '--stream-user',
    '--elections-user',
    '--issuer',
    '--validity',
    '4h',
  ]);
  const adminJwt = join(site.path, 'admin.jwt');
  await choria([
    'jwt',
    'client',
    adminJwt,
    'admin',
    issuer.seed,
    '--public-key',
    adminKeys.publicKey,
    '--fleet-management',
    '--validity',
    '4h',
  ]);
  const brokerJwt = join(site.path, 'broker.jwt');
  await choria(['jwt', 'server', brokerJwt, 'broker.example.net', brokerKeys.publicKey, issuer.seed]);
  return {
    flow,
    ca,
    caKey,
    broker,
    provisioner: { jwt: provisionerJwt, seed: provisionerKeys.seed },
    admin: { jwt: adminJwt, seed: adminKeys.seed, identity: 'admin' },
    issuer,
    brokerIdentity: { jwt: brokerJwt, seed: brokerKeys.seed },
  };
}

/** Options for {@link provisioningJwt}. */
export interface ProvisioningJwtOptions {
  token: string;
  urls: string;
  /** `chs`: servers check that requests are signed (`--no-insecure`). Default false, `choria jwt prov`'s default. */
  secure?: boolean;
  /** Protocol v2 (`--protocol-v2`). Default: the issuer flow's. */
  v2?: boolean;
  /** `--upgrade`: servers accept release_update. */
  upgrade?: boolean;
}

/** A provisioning JWT made with `choria jwt prov`, signed as the flow signs it; returns its path. */
export async function provisioningJwt(site: SiteDir, credentials: SiteCredentials, options: ProvisioningJwtOptions): Promise<string> {
  const file = join(site.path, 'provisioning.jwt');
  const signingKey = credentials.flow === 'x509' ? credentials.signer!.key : credentials.issuer!.seed;
  await choria([
    'jwt',
    'prov',
    file,
    signingKey,
    '--token',
    options.token,
    '--urls',
    options.urls,
    '--default',
    options.secure === true ? '--no-insecure' : '--insecure',
    ...((options.v2 ?? credentials.flow === 'issuer') ? ['--protocol-v2'] : []),
    ...(options.upgrade === true ? ['--upgrade'] : []),
  ]);
  return file;
}
