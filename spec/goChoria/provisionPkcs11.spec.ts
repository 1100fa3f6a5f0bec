import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { ChoriaSite, startChoriaSite } from '../helpers/goChoria/choriaSite';
import { RXFLEET_BIN, RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { SOFTHSM_MODULE, SoftHsmToken, createSoftHsmToken } from '../helpers/softHsm';
import { waitFor } from '../helpers/waitFor';

const SERVERS = 10;

// A site whose provisioner keeps its key on a PKCS#11 token (plugin.security.provider = pkcs11),
// here SoftHSM: the RSA key is generated on the token and never leaves it, the site's CA certified
// it, and the certificate is stored beside it. rxfleet opens the token as go-choria's provider
// does (driver_file, slot, the one key and certificate on it), the Choria Broker lets the
// provisioner user in only over TLS whose client certificate it verified (so the handshake was
// signed on the token, through OpenSSL's pkcs11 engine), and the requests that provision real
// go-choria servers are v1 requests signed on the token. The servers' provisioning JWT says
// `chs: true`, so go-choria validates every v1 request (its `SecureRequest.Valid`: the caller
// allowed by the embedded certificate, the signature verified with it) before acting on it.
describe('rxfleet provision against real go-choria servers with its key on a PKCS#11 token (SoftHSM)', () => {
  let token: SoftHsmToken;
  let site: ChoriaSite;
  let certificate: string;
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    token = await createSoftHsmToken();
    site = await startChoriaSite({
      flow: 'x509',
      servers: SERVERS,
      secure: true,
      provisionerSecurity: async (credentials) => {
        ({ certificate } = await token.addProvisionerCredentials(
          { cert: readFileSync(credentials.ca, 'utf8'), key: readFileSync(credentials.caKey, 'utf8') },
          'provisioner.mcollective',
        ));
        // The site's file-based credentials for the provisioner are gone: only the token has a key.
        rmSync(credentials.provisioner.key!);
        rmSync(credentials.provisioner.cert!);
        return [
          'plugin.security.provider = pkcs11',
          `plugin.security.pkcs11.driver_file = ${SOFTHSM_MODULE}`,
          `plugin.security.pkcs11.slot = ${token.slot}`,
          `plugin.security.file.ca = ${credentials.ca}`,
        ];
      },
    });
  }, 90_000);
  afterAll(async () => {
    await killAll(running.splice(0));
    await site?.stop();
    token?.remove();
  }, 30_000);

  it(`provisions all ${SERVERS} servers through the broker, TLS and requests signed on the token, the PIN in no line`, async () => {
    const pinFile = site.dir.file('token.pin', `${token.pin}\n`);
    const yaml = site.provisionerConfig('provisioner', ['workers: 4', 'site: spec', 'rxfleet:', `  pkcs11_pin_file: ${pinFile}`]);
    const provisioner = startRxfleet(['provision', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], {
      env: { ...site.helper.env, ...token.env },
    });
    running.push(provisioner);

    const security = await provisioner.next((l) => typeof l.msg === 'string' && l.msg.startsWith('security provider'));
    expect(security.msg).toBe(
      "security provider pkcs11: caller choria=provisioner.mcollective, TLS mutual, verified, requests v1, signed with the token's key",
    );
    await waitFor(
      async () => (await site.ping(SERVERS)).length === SERVERS,
      `choria ping to find all ${SERVERS} servers configured`,
      90_000,
    );
    expect(await site.ping(SERVERS)).toEqual([...site.servers.identities].sort());
    const provisioned = provisioner.lines.filter((l) => l.result === 'provisioned').map((l) => l.identity);
    expect([...provisioned].sort()).toEqual([...site.servers.identities].sort());
    for (const server of site.servers.servers) {
      expect(readFileSync(server.configFile, 'utf8')).toContain('plugin.security.provider=file');
      // The helper was given the CSR; the node's certificate is the site CA's, not the token's.
      expect(new X509Certificate(readFileSync(`${server.dir}/ssl/certificate.pem`)).subject).toBe(`CN=${server.identity}`);
    }
    expect(new X509Certificate(certificate).subject).toBe('CN=provisioner.mcollective');
    expect(`${provisioner.stdout()}${provisioner.stderr()}`).not.toContain(token.pin);
  }, 150_000);

  it('validate names the token, its certificate, the caller and where the PIN comes from, and refuses a wrong PIN without quoting it', async () => {
    const pinFile = site.dir.file('token.pin', `${token.pin}\n`);
    const yaml = site.dir.file(
      'validate.yaml',
      [`helper: ${site.helper.command}`, 'rxfleet:', `  pkcs11_pin_file: ${pinFile}`, ''].join('\n'),
    );
    const good = startRxfleet(['validate', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], { env: token.env });
    expect((await good.exited).code).toBe(0);
    expect(good.stdout().split('\n')[0]).toBe(
      `security provider pkcs11: caller choria=provisioner.mcollective, TLS mutual, verified, requests v1, signed with the token's key; key: the private key on the token "${token.label}" (serial ${/serial ([0-9a-f]+)/.exec(good.stdout())?.[1]}, slot ${token.slot}) through OpenSSL's pkcs11 engine (driver ${SOFTHSM_MODULE}), certificate: the token's (CN=provisioner.mcollective), CA ${site.credentials.ca}, PIN from ${pinFile} (rxfleet.pkcs11_pin_file)`,
    );

    const wrong = 'not-the-pin-4711';
    site.dir.file('token.pin', `${wrong}\n`);
    const refused = startRxfleet(['validate', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], { env: token.env });
    expect((await refused.exited).code).toBe(1);
    expect(refused.stdout().split('\n')).toContain(
      `error: ${site.provisionerChoriaConfig}: plugin.security.provider pkcs11: failed to login with provided pin: CKR_PIN_INCORRECT`,
    );
    expect(`${refused.stdout()}${refused.stderr()}`).not.toContain(wrong);
  }, 60_000);

  it('without a PIN file, asks for the PIN on the terminal as go-choria does, echoes nothing, and connects with it', async () => {
    const yaml = site.provisionerConfig('terminal', ['interval: 1h']);
    // `script` gives rxfleet a terminal (a pty) and copies what is written to its stdin onto it.
    const command = [process.execPath, RXFLEET_BIN, 'provision', '--config', yaml, '--choria-config', site.provisionerChoriaConfig]
      .map((a) => `'${a}'`)
      .join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      env: { ...process.env, ...token.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => out.includes('? PIN '), 'the PIN prompt', 20_000);
      child.stdin.write(`${token.pin}\r`);
      await waitFor(() => out.includes('connected to NATS'), 'rxfleet to connect with the PIN typed', 30_000);
      expect(out).toContain(
        "security provider pkcs11: caller choria=provisioner.mcollective, TLS mutual, verified, requests v1, signed with the token's key",
      );
      expect(out).not.toContain(token.pin);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('close', r));
    }
  }, 60_000);
});
