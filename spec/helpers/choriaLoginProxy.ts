import { KeyObject, randomBytes, verify } from 'node:crypto';
import { AddressInfo, Server, Socket, connect, createServer } from 'node:net';
import { TLSSocket } from 'node:tls';
import { jwtVerify } from 'jose';
import { ed25519PublicKeyFromRaw } from '../../lib/choria/ed25519Keys';

/** One login the proxy judged. */
export interface LoginRecord {
  accepted: boolean;
  /** Why it was refused, in go-choria's broker's words where it has them. */
  reason?: string;
  user?: string;
  /** The caller id in the token, when it verified. */
  callerId?: string;
  /** The client certificate's common name, when one was sent and verified. */
  clientCertificate?: string;
}

/** Options for {@link startChoriaLoginProxy}. */
export interface ChoriaLoginProxyOptions {
  /** The real nats-server the accepted connections are spliced to (plain TCP). */
  upstream: { port: number; user: string; password: string };
  /** The organisation issuer's public key: client JWTs must be signed by it. */
  issuer: KeyObject;
  /** `plugin.choria.network.provisioning.client_password`. */
  provisionerPassword: string;
  /** The broker's TLS: its certificate and key, and a CA when client certificates are verified. */
  tls: { cert: string; key: string; ca?: string };
  /** Listen on this loopback port (a broker restarted in place). Default a free one. */
  port?: number;
}

/** A Choria broker's front door for the provisioner user, in front of a real nats-server. */
export interface ChoriaLoginProxy {
  readonly url: string;
  readonly logins: LoginRecord[];
  close(): Promise<void>;
}

/**
 * nats-server 2.9 cannot check Choria's login (the client JWT as token, the nonce signed with the
 * key in that JWT), so this speaks the start of the NATS protocol as go-choria's broker does and
 * judges the CONNECT as `ChoriaAuth` does for the provisioner (`handleProvisioningUserConnection`
 * and `...WithIssuer`, plus the nonce check `verifyNonceSignature` makes of every JWT login):
 *
 * 1. INFO with `tls_required` and a fresh nonce, then TLS (client certificates required and
 *    verified against `tls.ca` when one is given);
 * 2. CONNECT: user `provisioner` with the provisioning password; `auth_token` a JWT that verifies
 *    with the issuer's key, of purpose `choria_client_id`, with the `provisioner` permission; and
 *    `sig` the unpadded URL-safe base64 ed25519 signature of the nonce by the token's `public_key`;
 * 3. refused: `-ERR 'Authorization Violation'` and the connection closed; accepted: a CONNECT as
 *    the upstream's provisioner user goes to the real server and the two sockets are spliced.
 */
export async function startChoriaLoginProxy(options: ChoriaLoginProxyOptions): Promise<ChoriaLoginProxy> {
  const logins: LoginRecord[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((raw) => {
    sockets.add(raw);
    raw.on('close', () => sockets.delete(raw));
    raw.on('error', () => raw.destroy());
    const nonce = randomBytes(16).toString('base64url');
    const { port } = server.address() as AddressInfo;
    const info = {
      server_id: 'CHORIA_SPEC_BROKER',
      server_name: 'choria-spec',
      version: '2.9.10',
      proto: 1,
      host: '127.0.0.1',
      port,
      headers: true,
      auth_required: true,
      tls_required: true,
      max_payload: 1048576,
      nonce,
    };
    raw.write(`INFO ${JSON.stringify(info)}\r\n`);
    const tls = new TLSSocket(raw, {
      isServer: true,
      cert: options.tls.cert,
      key: options.tls.key,
      ...(options.tls.ca !== undefined ? { ca: options.tls.ca, requestCert: true, rejectUnauthorized: true } : {}),
    });
    sockets.add(tls);
    tls.on('close', () => sockets.delete(tls));
    tls.on('error', () => tls.destroy());
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n');
      if (end < 0) return;
      tls.off('data', onData);
      tls.pause();
      const line = buffered.subarray(0, end).toString('utf8');
      const rest = buffered.subarray(end + 2);
      void judge(line, nonce, tls).then((record) => {
        logins.push(record);
        if (!record.accepted) {
          tls.end("-ERR 'Authorization Violation'\r\n");
          return;
        }
        splice(line, rest, tls);
      });
    };
    tls.on('data', onData);
  });

  const judge = async (line: string, nonce: string, tls: TLSSocket): Promise<LoginRecord> => {
    if (!line.startsWith('CONNECT ')) return { accepted: false, reason: 'expected CONNECT' };
    let connectOptions: Record<string, unknown>;
    try {
      connectOptions = JSON.parse(line.slice('CONNECT '.length)) as Record<string, unknown>;
    } catch {
      return { accepted: false, reason: 'CONNECT is not JSON' };
    }
    const user = typeof connectOptions.user === 'string' ? connectOptions.user : undefined;
    const peer = tls.getPeerCertificate();
    const cn: unknown = peer?.subject?.CN;
    const clientCertificate = typeof cn === 'string' ? cn : undefined;
    const refuse = (reason: string): LoginRecord => ({ accepted: false, reason, ...(user !== undefined ? { user } : {}) });
    if (user !== 'provisioner') return refuse('not the provisioning user');
    if (connectOptions.pass !== options.provisionerPassword) return refuse('invalid provisioner password supplied');
    const token = connectOptions.auth_token;
    if (typeof token !== 'string' || token === '') return refuse('no token provided in connection');
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(token, options.issuer, { algorithms: ['EdDSA'] }));
    } catch (error) {
      return refuse(`failed to parse client token issued by the choria chain: ${(error as Error).message}`);
    }
    const permissions = claims.permissions as Record<string, unknown> | undefined;
    if (claims.purpose !== 'choria_client_id') return refuse('not a client token');
    if (permissions?.provisioner !== true) return refuse(`provisioner claim is false in token with caller id '${String(claims.callerid)}'`);
    const sig = connectOptions.sig;
    if (typeof sig !== 'string' || sig === '') return refuse('connection nonce was not signed');
    if (typeof claims.public_key !== 'string' || claims.public_key.length !== 64)
      return refuse('no public key found in the JWT to verify nonce signature');
    const good = verify(
      null,
      Buffer.from(nonce),
      ed25519PublicKeyFromRaw(Buffer.from(claims.public_key, 'hex')),
      Buffer.from(sig, 'base64url'),
    );
    if (!good) return refuse('nonce signature did not verify using pub key in the jwt');
    return { accepted: true, user, callerId: String(claims.callerid), ...(clientCertificate !== undefined ? { clientCertificate } : {}) };
  };

  const splice = (line: string, rest: Buffer, client: TLSSocket): void => {
    const clientConnect = JSON.parse(line.slice('CONNECT '.length)) as Record<string, unknown>;
    delete clientConnect.auth_token;
    delete clientConnect.jwt;
    delete clientConnect.sig;
    const upstreamConnect = { ...clientConnect, user: options.upstream.user, pass: options.upstream.password };
    const upstream = connect({ port: options.upstream.port, host: '127.0.0.1' });
    sockets.add(upstream);
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    let greeting = Buffer.alloc(0);
    const onInfo = (chunk: Buffer): void => {
      greeting = Buffer.concat([greeting, chunk]);
      const end = greeting.indexOf('\r\n');
      if (end < 0) return;
      upstream.off('data', onInfo);
      // The real server's INFO is swallowed: the client already has the broker's.
      const after = greeting.subarray(end + 2);
      upstream.write(`CONNECT ${JSON.stringify(upstreamConnect)}\r\n`);
      upstream.write(rest);
      if (after.length > 0) client.write(after);
      upstream.pipe(client);
      client.pipe(upstream);
      client.resume();
    };
    upstream.on('data', onInfo);
  };

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `nats://127.0.0.1:${port}`,
    logins,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
