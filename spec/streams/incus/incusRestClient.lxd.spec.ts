import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IncusApiError } from '../../../lib/incus/api';
import { certificateFingerprint } from '../../../streams/incus/incusEndpoint';
import { IncusRestClient } from '../../../streams/incus/incusRestClient';
import { freePort } from '../../../streams/natsServerProcess';
import { selfSignedCertificate } from '../../helpers/certs';
import { DAEMON_KINDS, useTestDaemon } from '../../helpers/testDaemon';
import { X509Certificate } from 'node:crypto';

// Every reader call against a real LXD daemon (5.0 on Debian 12), over its unix socket and over
// https with a client certificate and the daemon's certificate pinned.

async function failure(promise: Promise<unknown>): Promise<IncusApiError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(IncusApiError);
    return error as IncusApiError;
  }
  throw new Error('expected the call to fail');
}

describe.each(DAEMON_KINDS)('IncusRestClient against a real %s daemon', (kind) => {
  const host = useTestDaemon(kind);
  let rest: IncusRestClient;
  let address: string;

  beforeAll(async () => {
    const inP2 = host()
      .createProject('p2')
      .then(() => host().launch('rp', { project: 'p2' }));
    await Promise.all([host().launch('r1'), inP2]);
    address = await host().waitForIPv4('r1');
    rest = new IncusRestClient({ endpoint: { url: host().socket } });
  }, 120_000);

  afterAll(() => rest?.close());

  it('reads an instance: running, in its project, with its configuration and devices', async () => {
    const instance = await rest.getInstance('default', 'r1');
    expect(instance).toMatchObject({ name: 'r1', project: 'default', type: 'container', status: 'Running', status_code: 103 });
    expect(instance.config['image.os']).toBe('busybox');
    expect(instance.expanded_devices?.eth0).toMatchObject({ type: 'nic', network: host().bridge });
    expect(instance.profiles).toEqual(['default']);
  });

  it("reads an instance's state with the DHCP address it leased on eth0", async () => {
    const state = await rest.getInstanceState('default', 'r1');
    expect(state.status_code).toBe(103);
    const eth0 = state.network?.eth0;
    // A difference written down: LXD's MAC addresses carry its 00:16:3e prefix, Incus's are its own (10:66:6a).
    expect(eth0?.hwaddr).toMatch(kind === 'incus' ? /^10:66:6a:/ : /^00:16:3e:/);
    expect(eth0?.addresses).toContainEqual({ family: 'inet', address, netmask: '24', scope: 'global' });
    expect(address.startsWith(host().gateway.split('.').slice(0, 3).join('.'))).toBe(true);
  });

  it('reads an instance of another project only with that project, and says notFound otherwise', async () => {
    expect(await rest.getInstance('p2', 'rp')).toMatchObject({ name: 'rp', project: 'p2', status: 'Running' });
    const error = await failure(rest.getInstance('default', 'rp'));
    expect(error.status).toBe(404);
    expect(error.notFound).toBe(true);
    expect(error.message).toContain('Instance not found');
  });

  it('reads a managed network with its address and users', async () => {
    const network = await rest.getNetwork('default', host().bridge);
    expect(network).toMatchObject({ name: host().bridge, type: 'bridge', managed: true });
    expect(network.config['ipv4.address']).toBe(host().gateway);
    expect(network.used_by).toEqual(expect.arrayContaining(['/1.0/instances/r1', '/1.0/instances/rp?project=p2', '/1.0/profiles/default']));
    expect((await failure(rest.getNetwork('default', 'nope0'))).notFound).toBe(true);
  });

  it("reads a project's own configuration, and says notFound for one that does not exist", async () => {
    const project = await rest.getProject('p2');
    expect(project.name).toBe('p2');
    expect(project.config).toMatchObject({ 'features.images': 'false', 'features.profiles': 'false' });
    expect((await failure(rest.getProject('nope'))).notFound).toBe(true);
  });

  it("lists names: projects, networks (unmanaged host NICs included), and each project's instances", async () => {
    expect((await rest.listProjectNames()).sort()).toEqual(['default', 'p2']);
    const networks = await rest.listNetworkNames('default');
    expect(networks).toContain(host().bridge);
    expect(networks).toContain('lo');
    expect(await rest.listInstanceNames('default')).toEqual(['r1']);
    expect(await rest.listInstanceNames('p2')).toEqual(['rp']);
    // LXD answers a project that does not exist with an empty list, not 404.
    expect(await rest.listInstanceNames('nope')).toEqual([]);
  });

  it('times out, and aborts, a call the daemon does not answer', async () => {
    const impatient = new IncusRestClient({ endpoint: { url: host().socket }, readTimeoutMs: 300 });
    await host().freeze();
    try {
      const timedOut = await failure(impatient.getInstance('default', 'r1'));
      expect(timedOut.status).toBe(0);
      expect(timedOut.message).toMatch(/no answer within 300 ms/);
      const controller = new AbortController();
      const call = rest.getProject('default', controller.signal);
      setTimeout(() => controller.abort(), 50);
      expect((await failure(call)).message).toMatch(/aborted$/);
    } finally {
      host().thaw();
      impatient.close();
    }
    expect((await rest.getProject('default')).name).toBe('default');
  });

  describe('over https', () => {
    let dir: string;
    let url: string;
    let serverCertFile: string;
    let clientCert: string;
    let clientKey: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'rxfleet-incus-https-'));
      const port = await freePort();
      await host().listenHttps(port);
      const client = await selfSignedCertificate('rxfleet-spec');
      clientCert = join(dir, 'client.crt');
      clientKey = join(dir, 'client.key');
      writeFileSync(clientCert, client.cert);
      writeFileSync(clientKey, client.key, { mode: 0o600 });
      await host().trustCertificate(clientCert, 'rxfleet-spec');
      serverCertFile = join(host().dir, 'server.crt');
      url = `https://127.0.0.1:${port}`;
    }, 60_000);

    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("reads with the daemon's certificate pinned by file or by fingerprint", async () => {
      const byFile = new IncusRestClient({ endpoint: { url, clientCert, clientKey, serverCert: serverCertFile } });
      expect(await byFile.getInstance('default', 'r1')).toMatchObject({ name: 'r1', status: 'Running' });
      expect(await byFile.listInstanceNames('p2')).toEqual(['rp']);
      byFile.close();

      const fingerprint = certificateFingerprint(new X509Certificate(readFileSync(serverCertFile)).raw);
      const byFingerprint = new IncusRestClient({ endpoint: { url, clientCert, clientKey, serverFingerprint: fingerprint } });
      expect((await byFingerprint.getInstanceState('default', 'r1')).status).toBe('Running');
      byFingerprint.close();
    });

    it('refuses the daemon when another certificate is pinned', async () => {
      const other = await selfSignedCertificate('not-the-daemon');
      const pinnedElsewhere = new IncusRestClient({ endpoint: { url, clientCert, clientKey, serverFingerprint: other.fingerprint } });
      const error = await failure(pinnedElsewhere.getProject('default'));
      pinnedElsewhere.close();
      expect(error.status).toBe(0);
      expect(error.message).toMatch(/not the pinned/);
    });

    it('is refused by the daemon with a client certificate it does not trust', async () => {
      const stranger = await selfSignedCertificate('stranger');
      const untrusted = new IncusRestClient({
        endpoint: { url, clientCert: stranger.cert, clientKey: stranger.key, serverCert: serverCertFile },
      });
      const error = await failure(untrusted.getInstance('default', 'r1'));
      untrusted.close();
      expect(error.status).toBe(403);
      expect(error.notFound).toBe(false);
    });
  });
});
