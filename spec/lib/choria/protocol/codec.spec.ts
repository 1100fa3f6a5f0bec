import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { ProtocolError } from '../../../../lib/choria/errors';
import {
  DEFAULT_MAX_BYTES,
  OutgoingRequest,
  decodeReply,
  decodeRequest,
  encodeReply,
  encodeRequest,
  withinTtl,
} from '../../../../lib/choria/protocol/codec';
import { decodeBase64Strict } from '../../../../lib/choria/protocol/encoding';
import { decodeAgentReply, decodeAgentRequest, encodeAgentReply, encodeAgentRequest } from '../../../../lib/choria/protocol/mcorpc';
import { broadcastSubject, directSubject, newRequestId, replySubject } from '../../../../lib/choria/protocol/subjects';
import { newFilter } from '../../../../lib/choria/protocol/types';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const NOW = 1_700_000_000_000;

// The layers exactly as the reference (§8.3) shows them, written out by hand rather than by the encoder.
const referenceRequest =
  '{"protocol":"choria:request:1","message":"{\\"agent\\":\\"choria_provision\\",\\"action\\":\\"jwt\\",\\"data\\":{\\"token\\":\\"s3cret\\"}}","envelope":{"requestid":"0123456789abcdef0123456789abcdef","senderid":"prov.example.net","callerid":"choria=prov.example.net","collective":"provisioning","agent":"choria_provision","ttl":60,"time":1700000000,"filter":{"fact":[],"cf_class":[],"agent":["choria_provision"],"identity":[],"compound":[]}}}';
const referenceSecureRequest = JSON.stringify({
  protocol: 'choria:secure:request:1',
  message: referenceRequest,
  signature: 'insecure',
  pubcert: 'insecure',
});
const referenceTransport = JSON.stringify({
  protocol: 'choria:transport:1',
  data: b64(referenceSecureRequest),
  headers: {
    'reply-to': 'provisioning.reply.8b2c1bbcfd1fb1b35c0d10e4e0c7ae8f.0123456789abcdef0123456789abcdef',
    mc_sender: 'prov.example.net',
  },
});

const referenceReply =
  '{"protocol":"choria:reply:1","message":"{\\"statuscode\\":0,\\"statusmsg\\":\\"OK\\",\\"data\\":{\\"message\\":\\"Restarting Choria Server after 2s\\"}}","envelope":{"requestid":"0123456789abcdef0123456789abcdef","senderid":"n1.example.net","agent":"choria_provision","time":1700000001}}';
// `openssl dgst -sha256 -binary | base64` of the reply above: the hash go-choria's client checks.
const referenceReplyHash = 'icxuyw9arvAzRnCU2J7ltv44IPwcRBe3uzZDpRS8T1o=';
const replyTransport = (secure: object, headers: object = { mc_sender: 'n1.example.net' }): string =>
  JSON.stringify({ protocol: 'choria:transport:1', data: b64(JSON.stringify(secure)), headers });

function outgoing(partial: Partial<OutgoingRequest> = {}): OutgoingRequest {
  return {
    requestId: '0123456789abcdef0123456789abcdef',
    senderId: 'prov.example.net',
    callerId: 'choria=prov.example.net',
    collective: 'provisioning',
    agent: 'choria_provision',
    ttl: 60,
    time: NOW,
    filter: newFilter({ agent: ['choria_provision'] }),
    payload: encodeAgentRequest('choria_provision', 'jwt', { token: 's3cret' }),
    replyTo: 'provisioning.reply.x.0123456789abcdef0123456789abcdef',
    ...partial,
  };
}

function refusal(decoded: { ok: boolean; error?: ProtocolError }): [string, string] {
  if (decoded.ok || decoded.error === undefined) throw new Error('expected a refusal');
  return [decoded.error.reason, decoded.error.layer];
}

describe('the Choria protocol codec', () => {
  describe('subjects and ids', () => {
    it('makes 32-character hex request ids, each different', () => {
      const ids = new Set(Array.from({ length: 1000 }, newRequestId));
      expect(ids.size).toBe(1000);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    });

    it('builds reply subjects from the MD5 of the caller id, as go-choria does', () => {
      // md5("choria=rip.mcollective"), from md5sum.
      expect(replySubject('provisioning', 'choria=rip.mcollective', 'abc')).toBe('provisioning.reply.37bdf08389145a56c13096c178802d3b.abc');
      expect(directSubject('provisioning', 'n1.example.net')).toBe('provisioning.node.n1.example.net');
      expect(broadcastSubject('provisioning', 'discovery')).toBe('provisioning.broadcast.agent.discovery');
    });
  });

  describe('v1', () => {
    it('decodes a request shaped exactly as the reference shows', () => {
      const decoded = decodeRequest(referenceTransport, { now: NOW });
      expect(decoded).toEqual({
        ok: true,
        value: {
          version: 'v1',
          requestId: '0123456789abcdef0123456789abcdef',
          senderId: 'prov.example.net',
          callerId: 'choria=prov.example.net',
          collective: 'provisioning',
          agent: 'choria_provision',
          ttl: 60,
          time: NOW,
          filter: { fact: [], cf_class: [], agent: ['choria_provision'], identity: [], compound: [] },
          payload: '{"agent":"choria_provision","action":"jwt","data":{"token":"s3cret"}}',
          replyTo: 'provisioning.reply.8b2c1bbcfd1fb1b35c0d10e4e0c7ae8f.0123456789abcdef0123456789abcdef',
          security: { signature: 'insecure', pubcert: 'insecure', signed: referenceRequest },
        },
      });
    });

    it("signs a request as go-choria's x509 providers do: base64 of the signer's bytes over the request JSON, the certificate in pubcert", () => {
      const signed: Buffer[] = [];
      const signer = {
        pubcert: () => '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
        sign: (json: Buffer) => (signed.push(json), Buffer.from('signature-bytes')),
      };
      const transport = JSON.parse(encodeRequest(outgoing(), { version: 'v1', signer }));
      const secure = JSON.parse(Buffer.from(transport.data, 'base64').toString());
      expect(secure.signature).toBe(Buffer.from('signature-bytes').toString('base64'));
      expect(secure.pubcert).toBe('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
      expect(signed).toEqual([Buffer.from(secure.message)]);
      const decoded = decodeRequest(JSON.stringify(transport), { now: NOW });
      expect(decoded.ok && decoded.value.security).toEqual({
        signature: secure.signature,
        pubcert: secure.pubcert,
        signed: secure.message,
      });
    });

    it('encodes an unsigned request layer by layer as the reference shows', () => {
      const transport = JSON.parse(encodeRequest(outgoing(), { version: 'v1' }));
      expect(transport.protocol).toBe('choria:transport:1');
      expect(transport.headers).toEqual({
        'reply-to': 'provisioning.reply.x.0123456789abcdef0123456789abcdef',
        mc_sender: 'prov.example.net',
      });
      const secure = JSON.parse(Buffer.from(transport.data, 'base64').toString());
      expect(secure).toEqual({
        protocol: 'choria:secure:request:1',
        message: expect.any(String),
        signature: 'insecure',
        pubcert: 'insecure',
      });
      const request = JSON.parse(secure.message);
      expect(request.protocol).toBe('choria:request:1');
      expect(request.message).toBe('{"agent":"choria_provision","action":"jwt","data":{"token":"s3cret"}}');
      expect(request.envelope).toEqual({
        requestid: '0123456789abcdef0123456789abcdef',
        senderid: 'prov.example.net',
        callerid: 'choria=prov.example.net',
        collective: 'provisioning',
        agent: 'choria_provision',
        ttl: 60,
        time: 1_700_000_000,
        filter: { fact: [], cf_class: [], agent: ['choria_provision'], identity: [], compound: [] },
      });
    });

    it('round-trips a request, with the payload raw or base64 (discovery sends base64 ping)', () => {
      const raw = decodeRequest(encodeRequest(outgoing(), { version: 'v1' }), { now: NOW });
      expect(raw.ok && raw.value.payload).toBe('{"agent":"choria_provision","action":"jwt","data":{"token":"s3cret"}}');
      const ping = decodeRequest(
        encodeRequest(outgoing({ agent: 'discovery', payload: 'ping', payloadEncoding: 'base64' }), { version: 'v1' }),
        { now: NOW },
      );
      expect(ping.ok && ping.value.payload).toBe('ping');
      const message = JSON.parse(
        JSON.parse(
          Buffer.from(
            JSON.parse(encodeRequest(outgoing({ payload: 'ping', payloadEncoding: 'base64' }), { version: 'v1' })).data,
            'base64',
          ).toString(),
        ).message,
      ).message;
      expect(message).toBe('cGluZw==');
    });

    it('decodes a reply shaped as the reference shows and checks its hash', () => {
      const decoded = decodeReply(replyTransport({ protocol: 'choria:secure:reply:1', message: referenceReply, hash: referenceReplyHash }));
      expect(decoded).toEqual({
        ok: true,
        value: {
          version: 'v1',
          requestId: '0123456789abcdef0123456789abcdef',
          senderId: 'n1.example.net',
          sender: 'n1.example.net',
          agent: 'choria_provision',
          time: 1_700_000_001_000,
          payload: '{"statuscode":0,"statusmsg":"OK","data":{"message":"Restarting Choria Server after 2s"}}',
        },
      });
    });

    it('encodes a reply whose hash is the base64 SHA-256 of the reply JSON', () => {
      const text = encodeReply(
        {
          requestId: '0123456789abcdef0123456789abcdef',
          senderId: 'n1.example.net',
          agent: 'choria_provision',
          time: 1_700_000_001_000,
          payload: '{"statuscode":0,"statusmsg":"OK","data":{"message":"Restarting Choria Server after 2s"}}',
        },
        'v1',
      );
      const secure = JSON.parse(Buffer.from(JSON.parse(text).data, 'base64').toString());
      expect(secure).toEqual({ protocol: 'choria:secure:reply:1', message: referenceReply, hash: referenceReplyHash });
      expect(JSON.parse(text).headers).toEqual({ mc_sender: 'n1.example.net' });
    });
  });

  describe('v2', () => {
    const security = { callerJwt: 'eyJhbGciOiJFZERTQSJ9.e30.c2ln' };

    it('encodes every layer with the v2 field names, base64 bytes and nanosecond time', () => {
      const transport = JSON.parse(encodeRequest(outgoing(), { version: 'v2', security }));
      expect(transport.protocol).toBe('io.choria.protocol.v2.transport');
      expect(transport.headers).toEqual({ reply: 'provisioning.reply.x.0123456789abcdef0123456789abcdef', sender: 'prov.example.net' });
      const secure = JSON.parse(Buffer.from(transport.data, 'base64').toString());
      expect(secure.protocol).toBe('io.choria.protocol.v2.secure_request');
      expect(secure.caller).toBe(security.callerJwt);
      expect(Buffer.from(secure.signature, 'base64').toString()).toBe('insecure');
      const requestText = Buffer.from(secure.request, 'base64').toString();
      expect(requestText).toContain('"time":1700000000000000000');
      const request = JSON.parse(requestText);
      expect(request).toMatchObject({
        protocol: 'io.choria.protocol.v2.request',
        id: '0123456789abcdef0123456789abcdef',
        sender: 'prov.example.net',
        caller: 'choria=prov.example.net',
        collective: 'provisioning',
        agent: 'choria_provision',
        ttl: 60,
      });
      expect(Buffer.from(request.message, 'base64').toString()).toBe(
        '{"agent":"choria_provision","action":"jwt","data":{"token":"s3cret"}}',
      );
    });

    it('carries discovery as go-choria does: the base64 text of ping as the message bytes, read back as ping', () => {
      // A go-choria server base64-decodes every request's message bytes (SetBase64Payload): sent as
      // the bytes `ping`, discovery reached its agent as \xa6)\xe0 and got no pong (found against
      // go-choria 0.29.4's servers).
      const text = encodeRequest(outgoing({ agent: 'discovery', payload: 'ping', payloadEncoding: 'base64' }), { version: 'v2', security });
      const secure = JSON.parse(Buffer.from(JSON.parse(text).data, 'base64').toString());
      const request = JSON.parse(Buffer.from(secure.request, 'base64').toString());
      expect(Buffer.from(request.message, 'base64').toString()).toBe('cGluZw==');
      const decoded = decodeRequest(text, { now: NOW });
      expect(decoded.ok && decoded.value.payload).toBe('ping');
    });

    it('signs the request bytes when given a signer', () => {
      let signed = '';
      const transport = JSON.parse(
        encodeRequest(outgoing(), {
          version: 'v2',
          security: { ...security, sign: (bytes) => ((signed = bytes.toString()), Buffer.from('sig')) },
        }),
      );
      const secure = JSON.parse(Buffer.from(transport.data, 'base64').toString());
      expect(Buffer.from(secure.signature, 'base64').toString()).toBe('sig');
      expect(Buffer.from(secure.request, 'base64').toString()).toBe(signed);
    });

    it('round-trips a request and a reply', () => {
      const request = decodeRequest(encodeRequest(outgoing(), { version: 'v2', security }), { now: NOW });
      expect(request).toEqual({
        ok: true,
        value: {
          version: 'v2',
          requestId: '0123456789abcdef0123456789abcdef',
          senderId: 'prov.example.net',
          callerId: 'choria=prov.example.net',
          collective: 'provisioning',
          agent: 'choria_provision',
          ttl: 60,
          time: NOW,
          filter: newFilter({ agent: ['choria_provision'] }),
          payload: '{"agent":"choria_provision","action":"jwt","data":{"token":"s3cret"}}',
          replyTo: 'provisioning.reply.x.0123456789abcdef0123456789abcdef',
          security: { signature: b64('insecure'), callerJwt: security.callerJwt },
        },
      });
      const reply = decodeReply(encodeReply({ requestId: 'r1', senderId: 'n1', agent: 'discovery', time: NOW, payload: 'pong' }, 'v2'));
      expect(reply).toEqual({
        ok: true,
        value: { version: 'v2', requestId: 'r1', senderId: 'n1', sender: 'n1', agent: 'discovery', time: NOW, payload: 'pong' },
      });
    });

    it('accepts a hex hash as well as base64 (the v2 schema describes hex, the code writes base64)', () => {
      const body = JSON.stringify({
        protocol: 'io.choria.protocol.v2.reply',
        message: b64('pong'),
        request: 'r1',
        sender: 'n1',
        agent: 'discovery',
        time: 1,
      });
      const hex = createHash('sha256').update(body).digest('hex');
      const transport = JSON.stringify({
        protocol: 'io.choria.protocol.v2.transport',
        data: b64(JSON.stringify({ protocol: 'io.choria.protocol.v2.secure_reply', reply: b64(body), hash: hex })),
        headers: { sender: 'n1' },
      });
      expect(decodeReply(transport).ok).toBe(true);
      const wrongHex = (hex[0] === 'f' ? '0' : 'f') + hex.slice(1);
      const wrong = JSON.stringify({
        protocol: 'io.choria.protocol.v2.transport',
        data: b64(JSON.stringify({ protocol: 'io.choria.protocol.v2.secure_reply', reply: b64(body), hash: wrongHex })),
        headers: { sender: 'n1' },
      });
      expect(refusal(decodeReply(wrong))).toEqual(['hash', 'secure_reply']);
    });

    it('defaults a missing v2 filter to an empty one', () => {
      const text = encodeRequest(outgoing(), { version: 'v2', security });
      const transport = JSON.parse(text);
      const secure = JSON.parse(Buffer.from(transport.data, 'base64').toString());
      const request = JSON.parse(Buffer.from(secure.request, 'base64').toString());
      delete request.filter;
      secure.request = b64(JSON.stringify(request));
      transport.data = b64(JSON.stringify(secure));
      const decoded = decodeRequest(JSON.stringify(transport), { now: NOW });
      expect(decoded.ok && decoded.value.filter).toEqual(newFilter());
    });
  });

  describe('refusals', () => {
    it('refuses another protocol at every layer, naming the layer', () => {
      expect(refusal(decodeRequest('{"protocol":"choria:transport:9","data":"","headers":{}}'))).toEqual(['protocol', 'transport']);
      const v2Inside = JSON.stringify({
        protocol: 'choria:transport:1',
        data: b64(JSON.stringify({ protocol: 'io.choria.protocol.v2.secure_request', request: 'eA==', signature: 'eA==', caller: 'x' })),
        headers: { 'reply-to': 'r' },
      });
      expect(refusal(decodeRequest(v2Inside))).toEqual(['protocol', 'secure_request']);
      const replyAsRequest = JSON.stringify({
        protocol: 'choria:transport:1',
        data: b64(
          JSON.stringify({ protocol: 'choria:secure:request:1', message: referenceReply, signature: 'insecure', pubcert: 'insecure' }),
        ),
        headers: { 'reply-to': 'r' },
      });
      expect(refusal(decodeRequest(replyAsRequest))).toEqual(['protocol', 'request']);
    });

    it("refuses bad base64, as Go's strict decoder does", () => {
      const bad = JSON.stringify({ ...JSON.parse(referenceTransport), data: '***not base64***' });
      expect(refusal(decodeRequest(bad, { now: NOW }))).toEqual(['base64', 'transport']);
      const unpadded = JSON.stringify({ ...JSON.parse(referenceTransport), data: b64(referenceSecureRequest).replace(/=+$/, '') });
      if (unpadded !== referenceTransport) expect(refusal(decodeRequest(unpadded, { now: NOW }))).toEqual(['base64', 'transport']);
      expect(decodeBase64Strict('cGluZw==')?.toString()).toBe('ping');
      expect(decodeBase64Strict('cGluZw')).toBeUndefined();
      expect(decodeBase64Strict('cGl uZw==')).toBeUndefined();
    });

    it('refuses a reply whose hash does not match', () => {
      const tampered = referenceReply.replace('Restarting', 'Rebooting!');
      expect(
        refusal(decodeReply(replyTransport({ protocol: 'choria:secure:reply:1', message: tampered, hash: referenceReplyHash }))),
      ).toEqual(['hash', 'secure_reply']);
    });

    it('refuses a stale request, and one from too far in the future, outside ±ttl', () => {
      expect(refusal(decodeRequest(referenceTransport, { now: NOW + 61_000 }))).toEqual(['stale', 'request']);
      expect(refusal(decodeRequest(referenceTransport, { now: NOW - 61_000 }))).toEqual(['stale', 'request']);
      expect(decodeRequest(referenceTransport, { now: NOW + 59_000 }).ok).toBe(true);
      expect(decodeRequest(referenceTransport, { now: NOW + 600_000, checkTtl: false }).ok).toBe(true);
      expect(withinTtl({ time: NOW, ttl: 60 }, NOW + 60_000)).toBe(false);
    });

    it('refuses an oversized message before parsing it', () => {
      const big = JSON.stringify({ protocol: 'choria:transport:1', data: 'A'.repeat(DEFAULT_MAX_BYTES), headers: {} });
      expect(refusal(decodeRequest(big))).toEqual(['oversized', 'transport']);
      expect(refusal(decodeReply(Buffer.from(referenceTransport), { maxBytes: 100 }))).toEqual(['oversized', 'transport']);
    });

    it('refuses what is not JSON, or not an object, without quoting it', () => {
      const decoded = decodeRequest('{"token": s3cret}');
      expect(refusal(decoded)).toEqual(['not_json', 'transport']);
      expect(!decoded.ok && decoded.error.message).not.toContain('s3cret');
      expect(refusal(decodeReply('[1,2]'))).toEqual(['schema', 'transport']);
    });

    it('refuses schema violations: a 31-character request id, a ttl under 30, a request without reply-to, a reply without sender', () => {
      const withEnvelope = (change: (e: Record<string, unknown>) => void): string => {
        const request = JSON.parse(referenceRequest);
        change(request.envelope);
        return JSON.stringify({
          ...JSON.parse(referenceTransport),
          data: b64(
            JSON.stringify({
              protocol: 'choria:secure:request:1',
              message: JSON.stringify(request),
              signature: 'insecure',
              pubcert: 'insecure',
            }),
          ),
        });
      };
      expect(
        refusal(
          decodeRequest(
            withEnvelope((e) => (e.requestid = 'x'.repeat(31))),
            { now: NOW },
          ),
        ),
      ).toEqual(['schema', 'request']);
      expect(
        refusal(
          decodeRequest(
            withEnvelope((e) => (e.ttl = 29)),
            { now: NOW },
          ),
        ),
      ).toEqual(['schema', 'request']);
      expect(
        refusal(
          decodeRequest(
            withEnvelope((e) => delete e.filter),
            { now: NOW },
          ),
        ),
      ).toEqual(['schema', 'request']);
      expect(refusal(decodeRequest(JSON.stringify({ ...JSON.parse(referenceTransport), headers: {} }), { now: NOW }))).toEqual([
        'schema',
        'transport',
      ]);
      expect(
        refusal(decodeReply(replyTransport({ protocol: 'choria:secure:reply:1', message: referenceReply, hash: referenceReplyHash }, {}))),
      ).toEqual(['schema', 'transport']);
    });

    it('never throws on arbitrary input, and refuses it with a reason', () => {
      fc.assert(
        fc.property(fc.oneof(fc.string(), fc.json(), fc.uint8Array({ maxLength: 512 })), (input) => {
          for (const decoded of [decodeRequest(input), decodeReply(input)]) {
            expect(decoded.ok).toBe(false);
            if (!decoded.ok) expect(decoded.error).toBeInstanceOf(ProtocolError);
          }
        }),
        { numRuns: 500 },
      );
    });

    it('never throws on a valid message with one character changed anywhere', () => {
      const original = encodeRequest(outgoing(), { version: 'v1' });
      fc.assert(
        fc.property(fc.nat({ max: original.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }), (at, char) => {
          const decoded = decodeRequest(original.slice(0, at) + char + original.slice(at + 1), { now: NOW });
          // v1 requests in provisioning mode are unsigned: a change that keeps every layer valid is a valid request.
          if (!decoded.ok) expect(decoded.error).toBeInstanceOf(ProtocolError);
          else expect(decoded.value.version).toBe('v1');
        }),
        { numRuns: 1000 },
      );
    });

    it('refuses a transport whose data has any character outside the base64 alphabet', () => {
      const transport = JSON.parse(encodeRequest(outgoing(), { version: 'v1' }));
      const data: string = transport.data;
      fc.assert(
        fc.property(fc.nat({ max: data.length - 1 }), fc.constantFrom('!', '-', '_', ' ', '.', '\\', '~'), (at, char) => {
          const decoded = decodeRequest(JSON.stringify({ ...transport, data: data.slice(0, at) + char + data.slice(at + 1) }), {
            now: NOW,
          });
          expect(refusal(decoded)).toEqual(['base64', 'transport']);
        }),
        { numRuns: 300 },
      );
    });

    it('refuses any change to a signed-off reply body through its hash', () => {
      fc.assert(
        fc.property(fc.nat({ max: referenceReply.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }), (at, char) => {
          fc.pre(referenceReply[at] !== char);
          const tampered = referenceReply.slice(0, at) + char + referenceReply.slice(at + 1);
          const decoded = decodeReply(replyTransport({ protocol: 'choria:secure:reply:1', message: tampered, hash: referenceReplyHash }));
          expect(refusal(decoded)).toEqual(['hash', 'secure_reply']);
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('the agent payload (mcorpc)', () => {
    it('round-trips a request and a reply', () => {
      expect(decodeAgentRequest(encodeAgentRequest('rpcutil', 'inventory', {}))).toEqual({
        ok: true,
        value: { agent: 'rpcutil', action: 'inventory', data: {} },
      });
      const reply = { statuscode: 1, statusmsg: 'Could not obtain provisioning lock', data: {}, action: 'jwt' };
      expect(decodeAgentReply(encodeAgentReply(reply))).toEqual({ ok: true, value: reply });
    });

    it('refuses a payload without an action or status code, and one that is not JSON', () => {
      expect(refusal(decodeAgentRequest('{"agent":"rpcutil"}'))).toEqual(['schema', 'agent']);
      expect(refusal(decodeAgentReply('{"statusmsg":"OK"}'))).toEqual(['schema', 'agent']);
      expect(refusal(decodeAgentReply('pong'))).toEqual(['not_json', 'agent']);
    });
  });
});
