import { readFileSync } from 'node:fs';
import { decodeHex, ed25519PrivateKeyFromSeed, ed25519Sign } from '../../lib/choria/ed25519Keys';
import { encodeRequest } from '../../lib/choria/protocol/codec';
import { encodeAgentRequest } from '../../lib/choria/protocol/mcorpc';
import { broadcastSubject, directSubject, newRequestId, replySubject } from '../../lib/choria/protocol/subjects';
import { newFilter } from '../../lib/choria/protocol/types';
import { createFleetKeys } from '../../lib/simulate/fleetKeys';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { SimulatedFleet, startSimulatedFleet } from '../../streams/simulate/simulatedFleet';
import { ChoriaSite, startChoriaSite } from '../helpers/goChoria/choriaSite';
import { SiteFlow } from '../helpers/goChoria/siteCredentials';
import { waitFor } from '../helpers/waitFor';

// `rxfleet simulate` checked against the real thing: a real go-choria server in provisioning mode
// and a simulated one log in to the same real Choria Broker with the same provisioning JWT, and
// are sent the same requests, byte for byte but for the request id. Every layer of each reply
// (transport headers, secure reply, reply envelope, agent reply), every lifecycle event, is
// compared field by field and in order, once the values that differ by nature are replaced by
// what they are (an identity, a time, a hash, a key, a JWT's claims by name). What the simulator
// keeps different on purpose is listed in docs/wire.md ("The simulator beside go-choria").

const SIM_CONFIG_DIR = '/etc/choria';

/** What a value is, where only its kind can be compared; the rest as is. */
function normalise(value: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => normalise(v, names));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normaliseField(k, v, names)]));
  }
  if (typeof value !== 'string') return value;
  let text = value;
  for (const [from, to] of names) text = text.split(from).join(to);
  if (/^eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/.test(text)) {
    const [header, claims] = text
      .split('.')
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()) as Record<string, unknown>);
    return { jwtHeader: Object.keys(header!), jwtClaims: normalise(claims, names) };
  }
  const pem = /^-----BEGIN ([A-Z ]+)-----\n[\s\S]+\n-----END \1-----(\n?)$/.exec(text);
  if (pem !== null) return `<PEM ${pem[1]}>${pem[2]}`;
  if (/^[0-9a-f]{64}$/.test(text)) return '<hex32>';
  if (/^[0-9a-f]{128}$/.test(text)) return '<hex64>';
  if (/^[0-9a-f]{32}$/.test(text)) return '<requestid>';
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(text)) return '<uuid>';
  if (/^[0-9A-Za-z]{27}$/.test(text)) return '<ksuid>';
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(text)) return '<rfc3339>';
  return text.replace(/after \d+s/, 'after <n>s');
}

const TIME_FIELDS = new Set(['time', 'timestamp', 'exp', 'nbf', 'iat', 'pong']);

function normaliseField(key: string, value: unknown, names: Map<string, string>): unknown {
  if (TIME_FIELDS.has(key) && typeof value === 'number') return '<unix>';
  if (key === 'hash' || key === 'signature') return typeof value === 'string' ? '<base64>' : value;
  if (key === 'data' && typeof value === 'string') return '<base64>';
  if (key === 'seen-by' && Array.isArray(value)) return value.map((hop: unknown[]) => hop.map((h) => normalise(h, names)));
  return normalise(value, names);
}

/** Every layer of a reply as JSON objects, v1 or v2, its agent payload parsed where it is JSON. */
function replyLayers(data: Uint8Array): Record<string, unknown> {
  const transport = JSON.parse(Buffer.from(data).toString()) as Record<string, unknown>;
  const secure = JSON.parse(Buffer.from(String(transport.data), 'base64').toString()) as Record<string, unknown>;
  const v2 = String(transport.protocol).startsWith('io.choria.protocol.v2');
  const replyText = v2 ? Buffer.from(String(secure.reply), 'base64').toString() : String(secure.message);
  const reply = JSON.parse(replyText) as Record<string, unknown>;
  const message = v2 ? Buffer.from(String(reply.message), 'base64').toString() : String(reply.message);
  let agent: unknown = message;
  try {
    agent = JSON.parse(message);
  } catch {
    // discovery's pong
  }
  return { transport, secure: { ...secure, [v2 ? 'reply' : 'message']: '<reply>' }, reply: { ...reply, message: '<agent>' }, agent };
}

describe.each<SiteFlow>(['x509', 'issuer'])('rxfleet simulate answers as a real go-choria server does (%s site)', (flow) => {
  let site: ChoriaSite;
  let probe: FleetConnection;
  let simConnection: FleetConnection;
  let fleet: SimulatedFleet;
  let real: string;
  const sim = `sim.${flow}.example.net`;
  const events: { subject: string; body: Record<string, unknown> }[] = [];
  let names: Map<string, string>;
  let encode: (request: Parameters<typeof encodeRequest>[0]) => string;
  let callerId: string;

  beforeAll(async () => {
    site = await startChoriaSite({ flow, servers: 1 });
    real = site.servers.identities[0]!;
    const c = site.credentials;
    const jwtFile = readFileSync(`${site.dir.path}/provisioning.jwt`, 'utf8');
    if (flow === 'x509') {
      probe = await openNatsConnection({
        servers: [site.broker.url],
        user: 'provisioner',
        password: site.provisionerPassword,
        tls: { ca: c.ca, cert: c.provisioner.cert!, key: c.provisioner.key! },
        inboxPrefix: 'provisioning.reply',
      });
      callerId = 'choria=provisioner.mcollective';
      encode = (request) => encodeRequest(request, { version: 'v1' });
    } else {
      const callerJwt = readFileSync(c.provisioner.jwt!, 'utf8').trim();
      const seed = ed25519PrivateKeyFromSeed(decodeHex(readFileSync(c.provisioner.seed!, 'utf8').trim()));
      probe = await openNatsConnection({
        servers: [site.broker.url],
        user: 'provisioner',
        password: site.provisionerPassword,
        tls: { ca: c.ca },
        jwtLogin: { jwt: callerJwt, sign: (nonce) => ed25519Sign(seed, nonce) },
        inboxPrefix: 'provisioning.reply',
      });
      callerId = 'provisioner.mcollective';
      encode = (request) => encodeRequest(request, { version: 'v2', security: { callerJwt, sign: (bytes) => ed25519Sign(seed, bytes) } });
    }
    probe.nc.subscribe('choria.lifecycle.>', {
      callback: (_e, m) => {
        events.push({ subject: m.subject, body: JSON.parse(Buffer.from(m.data).toString()) as Record<string, unknown> });
      },
    });
    await probe.nc.flush();
    // The simulated server logs in as a provisioning-mode server does: the provisioning JWT as the
    // token, TLS that verifies nothing of it (the broker's provisioning account).
    simConnection = await openNatsConnection({ servers: [site.broker.url], token: jwtFile, tls: { ca: c.ca } });
    const claims = JSON.parse(Buffer.from(jwtFile.split('.')[1]!, 'base64url').toString()) as { chu: string; chs: boolean };
    const keys = await createFleetKeys({
      claims: { token: site.token, urls: claims.chu.split(','), secure: claims.chs, v2: flow === 'issuer' },
      jwtSigningKey: readFileSync(flow === 'x509' ? c.signer!.key : c.issuer!.seed, 'utf8').trim(),
    });
    fleet = await startSimulatedFleet({
      nc: simConnection.nc,
      nodes: 1,
      token: site.token,
      keys,
      identity: () => sim,
      configDir: SIM_CONFIG_DIR,
    });
    await fleet.whenBooted();
    // The real server again, now that the probe listens: the service manager starts it after a kill.
    site.servers.servers[0]!.kill();
    await waitFor(
      () => events.some((e) => e.body.subject === real && e.body.type === 'io.choria.lifecycle.v1.startup'),
      'the real server to start again',
      20_000,
    );
    names = new Map([
      [site.servers.servers[0]!.dir, '<configdir>'],
      [SIM_CONFIG_DIR, '<configdir>'],
      [site.broker.url, '<broker>'],
      [real, '<identity>'],
      [sim, '<identity>'],
    ]);
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await simConnection?.drain();
    await probe?.drain();
    await site?.stop();
  }, 30_000);

  async function ask(target: string, agent: string, action: string, data: object, senderId = 'provisioner.mcollective'): Promise<unknown> {
    const requestId = newRequestId();
    const replyTo = replySubject('provisioning', callerId, requestId);
    const sub = probe.nc.subscribe(replyTo, { max: 1, timeout: 5000 });
    const filter = newFilter({ agent: [agent] });
    const payload = encodeAgentRequest(agent, action, data);
    probe.nc.publish(
      directSubject('provisioning', target),
      encode({ requestId, senderId, callerId, collective: 'provisioning', agent, ttl: 60, time: Date.now(), filter, payload, replyTo }),
    );
    for await (const m of sub) return normalise(replyLayers(m.data), names);
    return 'no reply';
  }

  /** The same request to both servers; each normalised reply, real first. */
  async function both(agent: string, action: string, data: object, senderId?: string): Promise<[unknown, unknown]> {
    return [await ask(real, agent, action, data, senderId), await ask(sim, agent, action, data, senderId)];
  }

  const expectAlike = ([fromReal, fromSim]: [unknown, unknown]): void => {
    // Strings compared, so that field order counts too.
    expect(JSON.stringify(fromSim, null, 1)).toBe(JSON.stringify(fromReal, null, 1));
  };

  it('answers discovery alike', async () => {
    const requestId = newRequestId();
    const replyTo = replySubject('provisioning', callerId, requestId);
    const replies = new Map<string, unknown>();
    const sub = probe.nc.subscribe(replyTo, {
      callback: (_e, m) => {
        const { headers } = JSON.parse(Buffer.from(m.data).toString()) as { headers: Record<string, string> };
        replies.set(headers[flow === 'x509' ? 'mc_sender' : 'sender']!, normalise(replyLayers(m.data), names));
      },
    });
    const filter = newFilter({ agent: ['choria_provision'] });
    probe.nc.publish(
      broadcastSubject('provisioning', 'discovery'),
      encode({
        requestId,
        senderId: 'provisioner.mcollective',
        callerId,
        collective: 'provisioning',
        agent: 'discovery',
        ttl: 60,
        time: Date.now(),
        filter,
        payload: 'ping',
        payloadEncoding: 'base64',
        replyTo,
      }),
    );
    await waitFor(() => replies.size === 2, 'both servers to answer discovery', 10_000);
    sub.unsubscribe();
    expectAlike([replies.get(real), replies.get(sim)]);
  });

  it('answers rpcutil inventory and ping alike', async () => {
    expectAlike(await both('rpcutil', 'inventory', {}));
    expectAlike(await both('rpcutil', 'ping', {}));
  });

  it('answers jwt alike, and refuses a wrong token alike', async () => {
    expectAlike(await both('choria_provision', 'jwt', { token: site.token }));
    expectAlike(await both('choria_provision', 'jwt', { token: 'not-the-token' }));
  });

  it('refuses another caller while the provisioning lock is held, alike', async () => {
    expectAlike(await both('choria_provision', 'jwt', { token: site.token }, 'another-provisioner.example.net'));
  });

  it('answers gen25519 and gencsr alike', async () => {
    expectAlike(await both('choria_provision', 'gen25519', { token: site.token, nonce: newRequestId() }));
    expectAlike(await both('choria_provision', 'gencsr', { token: site.token, cn: 'cn.example.net' }));
  });

  it('answers configure alike: refused when empty, then written (a provisioned event from each)', async () => {
    expectAlike(await both('choria_provision', 'configure', { token: site.token, config: '' }));
    const configure = {
      token: site.token,
      config: JSON.stringify({ 'plugin.choria.server.provision': 'true', loglevel: 'info' }),
      ca: '',
      certificate: '',
      ssldir: '',
      key: '',
      ecdh_public: '',
      action_policies: {},
      opa_policies: {},
      server_jwt: '',
    };
    expectAlike(await both('choria_provision', 'configure', configure));
    await waitFor(
      () => events.filter((e) => e.body.type === 'io.choria.lifecycle.v1.provisioned').length === 2,
      'a provisioned event from each',
    );
  });

  it('refuses restart while the configuration still enables provisioning, alike', async () => {
    expectAlike(await both('choria_provision', 'restart', { token: site.token, splay: 1 }));
  });

  it('answers release_update, reprovision and an unknown action alike', async () => {
    expectAlike(
      await both('choria_provision', 'release_update', { token: site.token, version: '0.99.0', repository: 'https://example.net/repo' }),
    );
    expectAlike(await both('choria_provision', 'reprovision', { token: site.token }));
    expectAlike(await both('choria_provision', 'no_such_action', { token: site.token }));
  });

  it('answers shutdown alike, refusing a wrong token first', async () => {
    expectAlike(await both('choria_provision', 'shutdown', { token: 'not-the-token' }));
    // go-choria exits from a goroutine after a splay of 0 to 9 s: with 0 its process can be gone
    // before its reply is sent (CI saw it). Then the exit is what the real server answered, and
    // the simulator's reply is held to the words go-choria's shutdown action writes.
    const fromReal = await ask(real, 'choria_provision', 'shutdown', { token: site.token }).catch((error: Error) => {
      if (error.name !== 'TimeoutError') throw error;
      return undefined;
    });
    const fromSim = await ask(sim, 'choria_provision', 'shutdown', { token: site.token });
    if (fromReal !== undefined) expectAlike([fromReal, fromSim]);
    else {
      await waitFor(() => !site.servers.servers[0]!.running(), 'the real server to exit', 15_000);
      expect(JSON.stringify(fromSim)).toContain('Shutting Choria Server down after <n>s');
    }
  });

  it('published its lifecycle events alike (startup, provisioned)', () => {
    for (const type of ['startup', 'provisioned']) {
      const from = (identity: string): { subject: string; body: unknown } => {
        const event = events.find((e) => e.body.subject === identity && e.body.type === `io.choria.lifecycle.v1.${type}`)!;
        return { subject: event.subject, body: normalise(event.body, names) };
      };
      expect(JSON.stringify(from(sim), null, 1)).toBe(JSON.stringify(from(real), null, 1));
    }
  });
});
