import { X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SiteFiles } from '../../../lib/siteFiles';
import { decodeRequest, encodeRequest } from '../../../lib/choria/protocol/codec';
import { ChoriaRequest, newFilter } from '../../../lib/choria/protocol/types';
import { V1Signer } from '../../../lib/choria/protocol/v1';
import { RequestSigningError, x509RequestSigner, x509SignerProblem } from '../../../lib/choria/requestSigner';
import { signedRequestRefusal } from '../../../lib/simulate/signedRequestCheck';
import { IssuedCertificate, TestCa, createTestCa } from '../../helpers/testCa';

const mapFiles = (entries: Record<string, string>): SiteFiles => ({
  read: (path) => {
    if (!(path in entries)) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
    return Buffer.from(entries[path]);
  },
  exists: (path) => path in entries,
});

describe("signed v1 requests: x509RequestSigner and the strict server's check", () => {
  let ca: TestCa;
  let other: TestCa;
  let client: IssuedCertificate;
  beforeAll(async () => {
    [ca, other] = await Promise.all([createTestCa('site CA'), createTestCa('another CA')]);
    client = await ca.issue('prov.mcollective', { dns: ['prov.mcollective'], pkcs1: true });
  }, 30_000);

  const request = (signer: V1Signer | undefined, callerId = 'choria=prov.mcollective'): ChoriaRequest => {
    const text = encodeRequest(
      {
        requestId: '0123456789abcdef0123456789abcdef',
        senderId: 'prov.example.net',
        callerId,
        collective: 'provisioning',
        agent: 'rpcutil',
        ttl: 60,
        time: Date.now(),
        filter: newFilter({ agent: ['rpcutil'] }),
        payload: '{"agent":"rpcutil","action":"inventory","data":{}}',
        replyTo: 'provisioning.reply.x.y',
      },
      { version: 'v1', ...(signer !== undefined ? { signer } : {}) },
    );
    const decoded = decodeRequest(text);
    if (!decoded.ok) throw decoded.error;
    return decoded.value;
  };
  const signerOf = (cert: IssuedCertificate) =>
    x509RequestSigner(mapFiles({ '/c.pem': cert.cert, '/k.pem': cert.key }), { certificate: '/c.pem', key: '/k.pem' });

  it("a request signed with the client's key and certificate passes, and OpenSSL agrees with the signature", () => {
    const signed = request(signerOf(client));
    expect(signed.security.pubcert).toBe(client.cert);
    expect(signedRequestRefusal(signed, { caPem: ca.cert })).toBeUndefined();

    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-sig-'));
    try {
      writeFileSync(join(dir, 'pub.pem'), new X509Certificate(client.cert).publicKey.export({ type: 'spki', format: 'pem' }));
      writeFileSync(join(dir, 'sig'), Buffer.from(signed.security.signature, 'base64'));
      writeFileSync(join(dir, 'msg'), signed.security.signed as string);
      expect(
        execFileSync('openssl', ['dgst', '-sha256', '-verify', join(dir, 'pub.pem'), '-signature', join(dir, 'sig'), join(dir, 'msg')], {
          encoding: 'utf8',
        }).trim(),
      ).toBe('Verified OK');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what a server with chs: true refuses', async () => {
    expect(signedRequestRefusal(request(undefined), { caPem: ca.cert })).toBe('the request is not signed');
    expect(signedRequestRefusal(request(signerOf(client)), { caPem: other.cert })).toBe(
      'certificate prov.mcollective did not pass verification: certificate signed by unknown authority',
    );
    expect(signedRequestRefusal(request(signerOf(client), 'choria=someone.mcollective'), { caPem: ca.cert })).toBe(
      'x509: certificate is valid for prov.mcollective, not someone.mcollective',
    );
    expect(signedRequestRefusal(request(signerOf(client), 'nonsense'), { caPem: ca.cert })).toBe(
      'could not find a valid caller identity name in nonsense',
    );

    const host = await ca.issue('prov.example.net', { dns: ['prov.example.net'] });
    expect(signedRequestRefusal(request(signerOf(host), 'choria=prov.example.net'), { caPem: ca.cert })).toBe(
      'certificate prov.example.net does not match the allowed list',
    );
    expect(
      signedRequestRefusal(request(signerOf(host), 'choria=prov.example.net'), { caPem: ca.cert, allowList: ['\\.example\\.net$'] }),
    ).toBeUndefined();

    const expired = await ca.issue('old.mcollective', {
      notBefore: new Date(Date.now() - 3 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    expect(signedRequestRefusal(request(signerOf(expired), 'choria=old.mcollective'), { caPem: ca.cert })).toMatch(
      /^certificate old.mcollective did not pass verification: certificate has expired/,
    );

    // The signature covers the request: another request's signature does not verify.
    const good = request(signerOf(client));
    const tampered: ChoriaRequest = {
      ...good,
      security: { ...good.security, signed: good.security.signed?.replace('inventory', 'inventorx') },
    };
    expect(signedRequestRefusal(tampered, { caPem: ca.cert })).toBe(
      'signature in request did not pass validation with embedded public certificate',
    );
  });

  it('a privileged certificate may sign for another caller, as go-choria allows', async () => {
    const admin = await ca.issue('ops.privileged.mcollective');
    expect(signedRequestRefusal(request(signerOf(admin), 'choria=prov.mcollective'), { caPem: ca.cert })).toBeUndefined();
  });

  it('the signer reads its files on every request; a key go-choria cannot sign with is refused with its message', async () => {
    const files: Record<string, string> = { '/c.pem': client.cert, '/k.pem': client.key };
    const signer = x509RequestSigner(mapFiles(files), { certificate: '/c.pem', key: '/k.pem' });
    expect(signer.pubcert()).toBe(client.cert);
    const renewed = await ca.issue('prov.mcollective');
    files['/c.pem'] = renewed.cert;
    files['/k.pem'] = renewed.key;
    expect(signedRequestRefusal(request(signer), { caPem: ca.cert })).toBeUndefined();
    expect(request(signer).security.pubcert).toBe(renewed.cert);

    const ec = await ca.issue('ec.mcollective', { keyType: 'ec' });
    const ecFiles = mapFiles({ '/c.pem': ec.cert, '/k.pem': ec.key });
    expect(() => x509RequestSigner(ecFiles, { certificate: '/c.pem', key: '/k.pem' }).sign(Buffer.from('{}'))).toThrow(RequestSigningError);
    expect(x509SignerProblem(ecFiles, { certificate: '/c.pem', key: '/k.pem' })).toBe(
      'could not sign message string: unhandled key type ec in /k.pem (go-choria signs requests with RSA keys only)',
    );
    expect(x509SignerProblem(mapFiles({ '/c.pem': client.cert, '/k.pem': 'not a key' }), { certificate: '/c.pem', key: '/k.pem' })).toMatch(
      /^could not parse private key PEM data in \/k.pem/,
    );
    expect(
      x509SignerProblem(mapFiles({ '/c.pem': client.cert, '/k.pem': client.key }), { certificate: '/c.pem', key: '/k.pem' }),
    ).toBeUndefined();
  });
});
