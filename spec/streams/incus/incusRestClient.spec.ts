import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { IncusApiError } from '../../../lib/incus/api';
import { IncusEndpointError, IncusPinError, defaultIncusSocket, incusEndpoint } from '../../../streams/incus/incusEndpoint';
import { IncusRestClient } from '../../../streams/incus/incusRestClient';
import { TestCertificate, selfSignedCertificate } from '../../helpers/certs';

// The REST client against small stand-in servers, for what a real daemon cannot be made to do on
// cue (hang, answer garbage, drop a kept connection, present a foreign certificate). Everything a
// real daemon does answer is specced against one in incusRestClient.lxd.spec.ts.

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const sync = (metadata: unknown): string =>
  JSON.stringify({ type: 'sync', status: 'Success', status_code: 200, operation: '', error_code: 0, error: '', metadata });

async function rejection(promise: Promise<unknown>): Promise<IncusApiError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(IncusApiError);
    return error as IncusApiError;
  }
  throw new Error('expected the call to fail');
}

describe('IncusRestClient against a stand-in server on a unix socket', () => {
  let dir: string;
  let server: Server;
  let handler: Handler;
  const requests: string[] = [];
  const connections: Socket[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-incus-rest-'));
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      handler(req, res);
    });
    server.on('connection', (socket: Socket) => connections.push(socket));
    await new Promise<void>((r) => server.listen(join(dir, 'unix.socket'), r));
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    requests.length = 0;
    connections.length = 0;
  });

  const client = (options: { readTimeoutMs?: number; maxResponseBytes?: number; registry?: Registry } = {}): IncusRestClient =>
    new IncusRestClient({ endpoint: { url: join(dir, 'unix.socket') }, ...options });

  it('sends ?project= on scoped calls, none on projects, and returns the metadata', async () => {
    handler = (req, res) =>
      res.end(
        sync(
          req.url?.startsWith('/1.0/projects/')
            ? { name: 'p', config: { a: '1' } }
            : { name: 'c1', project: 'p 2', config: { k: 'v' }, devices: {} },
        ),
      );
    const rest = client();
    const instance = await rest.getInstance('p 2', 'c1');
    const project = await rest.getProject('p');
    rest.close();
    expect(instance).toEqual({ name: 'c1', project: 'p 2', config: { k: 'v' }, devices: {} });
    expect(project).toEqual({ name: 'p', config: { a: '1' } });
    expect(requests).toEqual(['/1.0/instances/c1?project=p%202', '/1.0/projects/p']);
  });

  it('turns null maps into empty ones, so a reader never meets null where the shape says a map', async () => {
    handler = (req, res) => {
      if (req.url?.includes('/state'))
        res.end(sync({ status: 'Running', status_code: 103, network: { eth0: { addresses: null, hwaddr: '00:16:3e:00:00:01' } } }));
      else if (req.url?.startsWith('/1.0/networks/')) res.end(sync({ name: 'br0', type: 'bridge', managed: true, config: null }));
      else res.end(sync({ name: 'c1', project: 'default', config: null, devices: null }));
    };
    const rest = client();
    const instance = await rest.getInstance('default', 'c1');
    const state = await rest.getInstanceState('default', 'c1');
    const network = await rest.getNetwork('default', 'br0');
    rest.close();
    expect(instance.config).toEqual({});
    expect(instance.devices).toEqual({});
    expect(state.network?.eth0.addresses).toEqual([]);
    expect(network.config).toEqual({});
  });

  it('turns URL lists into names, percent-decoded and without the project query', async () => {
    handler = (_req, res) => res.end(sync(['/1.0/instances/a?project=p2', '/1.0/instances/b%2Dc?project=p2']));
    const rest = client();
    expect(await rest.listInstanceNames('p2')).toEqual(['a', 'b-c']);
    rest.close();
  });

  it('reports an error envelope with its error_code, and 404 as notFound', async () => {
    handler = (_req, res) => {
      res.statusCode = 404;
      res.end(
        JSON.stringify({
          type: 'error',
          status: '',
          status_code: 0,
          operation: '',
          error_code: 404,
          error: 'Instance not found',
          metadata: null,
        }),
      );
    };
    const rest = client();
    const error = await rejection(rest.getInstance('default', 'gone'));
    rest.close();
    expect(error.status).toBe(404);
    expect(error.notFound).toBe(true);
    expect(error.message).toBe('GET /1.0/instances/gone?project=default: Instance not found (404)');
  });

  it.each([
    ['an answer that is not JSON', 502, 'Bad Gateway', 502, /not JSON \(HTTP 502\)/],
    ['an async answer to a GET', 202, JSON.stringify({ type: 'async', metadata: {} }), 202, /expected a sync answer/],
    ['a JSON answer that is not an envelope', 200, '[1]', 200, /not an envelope/],
    ['metadata that is not an object', 200, sync('x'), 0, /metadata is not an object/],
  ])('fails on %s, with the status it had', async (_what, httpStatus, body, status, message) => {
    handler = (_req, res) => {
      res.statusCode = httpStatus;
      res.end(body);
    };
    const rest = client();
    const error = await rejection(rest.getProject('p'));
    rest.close();
    expect(error.status).toBe(status);
    expect(error.message).toMatch(message);
    expect(error.notFound).toBe(false);
  });

  it('fails on a listing that is not a list of URLs', async () => {
    handler = (_req, res) => res.end(sync(['/1.0/projects/a', 7]));
    const rest = client();
    const error = await rejection(rest.listProjectNames());
    rest.close();
    expect(error.message).toMatch(/not a list of URLs/);
  });

  it('refuses an answer larger than the limit', async () => {
    handler = (_req, res) => res.end(sync({ name: 'x'.repeat(10_000), config: {} }));
    const rest = client({ maxResponseBytes: 1000 });
    const error = await rejection(rest.getProject('p'));
    rest.close();
    expect(error.status).toBe(0);
    expect(error.message).toMatch(/larger than 1000 bytes/);
  });

  it('gives up on a server that does not answer within the read timeout', async () => {
    handler = () => undefined; // never answers
    const rest = client({ readTimeoutMs: 50 });
    const error = await rejection(rest.getInstance('default', 'slow'));
    rest.close();
    expect(error.status).toBe(0);
    expect(error.message).toBe('GET /1.0/instances/slow?project=default: no answer within 50 ms');
  });

  it('aborts a call in flight when its signal aborts, closing the request', async () => {
    const arrived = new Promise<IncomingMessage>((resolve) => (handler = (req) => resolve(req)));
    const rest = client();
    const controller = new AbortController();
    const call = rest.getInstance('default', 'c1', controller.signal);
    const req = await arrived;
    const closed = new Promise<void>((r) => req.socket.once('close', () => r()));
    controller.abort();
    const error = await rejection(call);
    await closed;
    rest.close();
    expect(error.status).toBe(0);
    expect(error.message).toMatch(/aborted$/);
  });

  it('does not even send a call whose signal has already aborted', async () => {
    handler = (_req, res) => res.end(sync({ name: 'p', config: {} }));
    const rest = client();
    const error = await rejection(rest.getProject('p', AbortSignal.abort()));
    rest.close();
    expect(error.message).toMatch(/aborted$/);
    expect(requests).toEqual([]);
  });

  it('keeps the connection alive between calls', async () => {
    handler = (_req, res) => res.end(sync({ name: 'p', config: {} }));
    const rest = client();
    for (let i = 0; i < 5; i++) await rest.getProject('p');
    rest.close();
    expect(requests).toHaveLength(5);
    expect(connections).toHaveLength(1);
  });

  it('sends a call once more on a new connection when the kept one turns out closed', async () => {
    const served = new WeakSet<Socket>();
    handler = (req, res) => {
      // The second request on a kept connection meets a server that had closed it meanwhile.
      if (served.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      res.end(sync({ name: 'p', config: {} }));
    };
    const rest = client();
    await rest.getProject('p');
    expect(await rest.getProject('p')).toEqual({ name: 'p', config: {} });
    rest.close();
    expect(requests).toHaveLength(3);
    expect(connections).toHaveLength(2);
  });

  it('counts every call once, by call and result', async () => {
    handler = (req, res) => {
      if (req.url?.includes('gone')) {
        res.statusCode = 404;
        res.end(JSON.stringify({ type: 'error', error_code: 404, error: 'Instance not found' }));
      } else res.end(sync({ name: 'c', config: {}, devices: {} }));
    };
    const registry = new Registry();
    const rest = client({ registry });
    await rest.getInstance('default', 'c');
    await rest.getInstance('default', 'c');
    await rejection(rest.getInstance('default', 'gone'));
    rest.close();
    const text = await registry.metrics();
    expect(text).toContain('incus_api_requests_total{call="instance",result="ok"} 2');
    expect(text).toContain('incus_api_requests_total{call="instance",result="not_found"} 1');
    expect(text).toContain('incus_api_request_seconds_count{call="instance"} 3');
  });
});

describe('incusEndpoint', () => {
  let dir: string;
  let client: TestCertificate;
  let other: TestCertificate;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-incus-endpoint-'));
    client = await selfSignedCertificate('rxfleet-client');
    other = await selfSignedCertificate('someone-else');
    writeFileSync(join(dir, 'client.crt'), client.cert);
    writeFileSync(join(dir, 'client.key'), client.key);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('takes a socket path, a unix: URL, or an https URL (port 8443 unless given)', () => {
    expect(incusEndpoint({ url: '/var/lib/lxd/unix.socket' })).toMatchObject({
      kind: 'unix',
      address: '/var/lib/lxd/unix.socket',
      host: 'lxd',
    });
    expect(incusEndpoint({ url: 'unix:///run/incus.socket' })).toMatchObject({ kind: 'unix', address: '/run/incus.socket' });
    const tls = { clientCert: join(dir, 'client.crt'), clientKey: join(dir, 'client.key'), serverFingerprint: other.fingerprint };
    expect(incusEndpoint({ url: 'https://incus.example.net', ...tls })).toMatchObject({
      kind: 'https',
      address: 'https://incus.example.net:8443',
      host: 'incus.example.net:8443',
    });
    expect(incusEndpoint({ url: 'https://[::1]:9443', ...tls })).toMatchObject({
      kind: 'https',
      address: 'https://[::1]:9443',
      host: '[::1]:9443',
    });
  });

  it('finds the local socket from the environment, then the usual places', () => {
    expect(defaultIncusSocket({ LXD_DIR: '/tmp/x' }, () => false)).toBe('/tmp/x/unix.socket');
    expect(defaultIncusSocket({ INCUS_SOCKET: '/s' }, () => false)).toBe('/s');
    expect(defaultIncusSocket({}, (p) => p === '/var/lib/incus/unix.socket')).toBe('/var/lib/incus/unix.socket');
    expect(defaultIncusSocket({}, () => false)).toBe('/var/lib/lxd/unix.socket');
  });

  it.each([
    ['plain http', { url: 'http://incus:8443' }, /not served by Incus or LXD/],
    ['something else', { url: 'incus.example.net' }, /neither a unix socket path nor an https URL/],
    [
      'a path in the URL',
      { url: 'https://incus:8443/1.0', clientCert: 'c', clientKey: 'k', serverFingerprint: 'f' },
      /only the scheme, host and port/,
    ],
    ['https without a client certificate', { url: 'https://incus:8443', serverFingerprint: 'f' }, /needs clientCert and clientKey/],
    ['https without a pin', { url: 'https://incus:8443', clientCert: 'c', clientKey: 'k' }, /needs the server certificate pinned/],
    [
      'a fingerprint that is not SHA-256 hex',
      { url: 'https://incus:8443', clientCert: 'c', clientKey: 'k', serverFingerprint: 'abc' },
      /64 hex digits/,
    ],
    [
      'a certificate file that does not exist',
      { url: 'https://incus:8443', clientCert: '/nonexistent.crt', clientKey: 'k', serverFingerprint: 'a'.repeat(64) },
      /cannot read clientCert from \/nonexistent.crt: ENOENT/,
    ],
  ])('refuses %s', (_what, options, message) => {
    expect(() => incusEndpoint(options)).toThrow(IncusEndpointError);
    expect(() => incusEndpoint(options)).toThrow(message);
  });

  it("refuses a key that is not the certificate's, without quoting the key", () => {
    const options = { url: 'https://incus:8443', clientCert: client.cert, clientKey: other.key, serverFingerprint: other.fingerprint };
    expect(() => incusEndpoint(options)).toThrow('clientKey is not the key of clientCert');
    try {
      incusEndpoint(options);
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('PRIVATE KEY');
    }
  });

  it('refuses two pins that name different certificates', () => {
    expect(() =>
      incusEndpoint({
        url: 'https://incus:8443',
        clientCert: client.cert,
        clientKey: client.key,
        serverCert: other.cert,
        serverFingerprint: client.fingerprint,
      }),
    ).toThrow('serverCert and serverFingerprint name different certificates');
  });

  it('accepts a fingerprint with colons and in upper case', () => {
    const colons = other.fingerprint.toUpperCase().replace(/(..)(?!$)/g, '$1:');
    expect(() =>
      incusEndpoint({
        url: 'https://incus:8443',
        clientCert: client.cert,
        clientKey: client.key,
        serverFingerprint: colons,
        serverCert: other.cert,
      }),
    ).not.toThrow();
  });
});

describe('IncusRestClient over https with a pinned server certificate', () => {
  let serverCert: TestCertificate;
  let clientCert: TestCertificate;
  let server: ReturnType<typeof createHttpsServer>;
  let port: number;
  const seen: Array<{ url: string; clientFingerprint: string }> = [];

  beforeAll(async () => {
    serverCert = await selfSignedCertificate('incus-standin', { dns: ['localhost'], ip: ['127.0.0.1'] });
    clientCert = await selfSignedCertificate('rxfleet-client');
    server = createHttpsServer({ cert: serverCert.cert, key: serverCert.key, requestCert: true, rejectUnauthorized: false }, (req, res) => {
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
      seen.push({ url: req.url ?? '', clientFingerprint: peer.fingerprint256?.replace(/:/g, '').toLowerCase() ?? '' });
      res.end(sync({ name: 'p', config: {} }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  beforeEach(() => {
    seen.length = 0;
  });

  const https = (pin: { serverCert?: string; serverFingerprint?: string }): IncusRestClient =>
    new IncusRestClient({ endpoint: { url: `https://127.0.0.1:${port}`, clientCert: clientCert.cert, clientKey: clientCert.key, ...pin } });

  it('reads from the server whose certificate is pinned by fingerprint, presenting the client certificate', async () => {
    const rest = https({ serverFingerprint: serverCert.fingerprint });
    expect(await rest.getProject('p')).toEqual({ name: 'p', config: {} });
    rest.close();
    expect(seen).toEqual([{ url: '/1.0/projects/p', clientFingerprint: clientCert.fingerprint }]);
  });

  it('reads from the server whose certificate is pinned by the certificate itself', async () => {
    const rest = https({ serverCert: serverCert.cert });
    expect(await rest.getProject('p')).toEqual({ name: 'p', config: {} });
    rest.close();
    expect(seen).toHaveLength(1);
  });

  it('reads the certificate, key and pinned certificate files again once they change on disk: a renewal needs no restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-incus-tls-'));
    try {
      const file = (name: string, text: string): string => {
        // Written beside and renamed over, as a renewal tool would: the old inode stays whole.
        writeFileSync(join(dir, `${name}.new`), text);
        renameSync(join(dir, `${name}.new`), join(dir, name));
        return join(dir, name);
      };
      const endpoint = incusEndpoint({
        url: `https://127.0.0.1:${port}`,
        clientCert: file('client.crt', clientCert.cert),
        clientKey: file('client.key', clientCert.key),
        serverCert: file('server.crt', serverCert.cert),
      });
      const once = async (): Promise<unknown> => {
        const rest = new IncusRestClient({ endpoint });
        try {
          return await rest.getProject('p');
        } finally {
          rest.close();
        }
      };
      await once();
      const renewed = await selfSignedCertificate('rxfleet-client-renewed');
      file('client.crt', renewed.cert);
      file('client.key', renewed.key);
      await once();
      expect(seen.map((s) => s.clientFingerprint)).toEqual([clientCert.fingerprint, renewed.fingerprint]);
      // The pinned certificate renewed too (here to one the server does not have): the next
      // connection is held to the new pin.
      const next = await selfSignedCertificate('incus-standin-renewed');
      file('server.crt', next.cert);
      const refused = await once().then(
        () => undefined,
        (error: unknown) => error as IncusApiError,
      );
      expect(refused?.cause).toBeInstanceOf(IncusPinError);
      expect(seen).toHaveLength(2);
      // A renewal caught half written fails that connection alone, saying which file; once whole, it is read.
      file('server.crt', 'not yet');
      const half = await once().then(
        () => undefined,
        (error: unknown) => error as IncusApiError,
      );
      expect(half?.cause).toBeInstanceOf(IncusEndpointError);
      expect(String((half?.cause as Error).message)).toBe('serverCert is not a PEM certificate');
      file('server.crt', serverCert.cert);
      expect(await once()).toEqual({ name: 'p', config: {} });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses any other server before sending it a single request', async () => {
    const impostor = await selfSignedCertificate('impostor');
    const rest = https({ serverFingerprint: impostor.fingerprint });
    const error = await rejection(rest.getProject('p'));
    rest.close();
    expect(error.status).toBe(0);
    expect(error.cause).toBeInstanceOf(IncusPinError);
    expect(error.message).toContain(`not the pinned ${impostor.fingerprint}`);
    expect(seen).toEqual([]);
  });
});
