import { createHash } from 'node:crypto';
import { decodeReply, decodeRequest, encodeReply } from '../../../../lib/choria/protocol/codec';
import { AGENT_BOUNDS, LIFECYCLE_MAX_BYTES } from '../../../../lib/choria/protocol/bounds';
import { decodeAgentReply, encodeAgentReply } from '../../../../lib/choria/protocol/mcorpc';
import { lifecycleEventJson, newLifecycleEvent, parseLifecycleEvent } from '../../../../lib/choria/lifecycle';
import { MAX_IDENTITY_LENGTH } from '../../../../lib/choria/protocol/schemas';
import { Decoded } from '../../../../lib/choria/protocol/types';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const nested = (depth: number, inner = ''): string => '['.repeat(depth) + inner + ']'.repeat(depth);

function refusal<T>(decoded: Decoded<T>): [string, string] {
  if (decoded.ok) throw new Error('expected a refusal');
  return [decoded.error.reason, decoded.error.layer];
}

// A v1 reply with everything a transport can carry from a federated, multi-broker network: seen-by
// hops and the federation header (go-choria's TransportHeaders), the deepest a transport nests.
function federatedReply(): string {
  const body = JSON.stringify({
    protocol: 'choria:reply:1',
    message: encodeAgentReply({ statuscode: 0, statusmsg: 'OK', data: { facts: { os: { release: { major: '12' } } } } }),
    envelope: { requestid: 'a'.repeat(32), senderid: 'n1.example.net', agent: 'rpcutil', time: 1_700_000_000 },
  });
  const secure = JSON.stringify({
    protocol: 'choria:secure:reply:1',
    message: body,
    hash: createHash('sha256').update(body).digest('base64'),
  });
  return JSON.stringify({
    protocol: 'choria:transport:1',
    data: b64(secure),
    headers: {
      mc_sender: 'n1.example.net',
      'seen-by': [
        ['nats://b1:4222', 'fed1', 'nats://c1:4222'],
        ['nats://b2:4222', 'fed2', 'nats://c2:4222'],
      ],
      federation: { req: 'b'.repeat(32), 'reply-to': 'choria.federation.reply', target: ['provisioning.node.n1.example.net'] },
    },
  });
}

describe('what cannot be a Choria message is refused before it is built (issue 37)', () => {
  it('still decodes a transport carrying every header a federated network adds', () => {
    const decoded = decodeReply(federatedReply());
    expect(decoded.ok && decoded.value.sender).toBe('n1.example.net');
  });

  it.each([
    ['data nested 150,000 arrays deep', `{"protocol":"choria:transport:1","data":${nested(150_000)},"headers":{}}`],
    ['seen-by nested 33 deep', `{"protocol":"choria:transport:1","data":"e30=","headers":{"seen-by":${nested(32)}}}`],
    ['100,000 empty arrays', `{"protocol":"choria:transport:1","data":[${Array(100_000).fill('[]').join(',')}],"headers":{}}`],
  ])('refuses a transport with %s as oversized, at the transport', (_what, text) => {
    expect(refusal(decodeReply(text))).toEqual(['oversized', 'transport']);
    expect(refusal(decodeRequest(text))).toEqual(['oversized', 'transport']);
  });

  it('refuses a secure layer or a reply layer nested past the envelope bounds, at that layer', () => {
    const secure = `{"protocol":"choria:secure:reply:1","message":${nested(40)},"hash":"x"}`;
    expect(
      refusal(decodeReply(JSON.stringify({ protocol: 'choria:transport:1', data: b64(secure), headers: { mc_sender: 'n1' } }))),
    ).toEqual(['oversized', 'secure_reply']);
  });

  it('refuses a reply whose sender (discovery takes it as an identity) is longer than any node can have', () => {
    const from = (sender: string, version: 'v1' | 'v2') =>
      decodeReply(
        encodeReply({ requestId: 'a'.repeat(32), senderId: sender, agent: 'discovery', time: Date.now(), payload: 'pong' }, version),
      );
    for (const version of ['v1', 'v2'] as const) {
      expect(from('n'.repeat(MAX_IDENTITY_LENGTH), version).ok).toBe(true);
      expect(refusal(from('n'.repeat(MAX_IDENTITY_LENGTH + 1), version))).toEqual(['schema', 'transport']);
    }
  });

  it("reads an agent payload as deep as Go's decoder does (10,000 levels), and refuses one deeper", () => {
    // The root object is level 1 and `data` holds the arrays: 9,999 of them reach the limit.
    const atLimit = `{"statuscode":0,"statusmsg":"OK","data":${nested(AGENT_BOUNDS.maxDepth - 1)}}`;
    expect(decodeAgentReply(atLimit).ok).toBe(true);
    const past = `{"statuscode":0,"statusmsg":"OK","data":${nested(AGENT_BOUNDS.maxDepth)}}`;
    expect(refusal(decodeAgentReply(past))).toEqual(['oversized', 'agent']);
  });

  it('reads an agent payload of any number of values: facts are the node’s own', () => {
    const facts = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`fact${i}`, { values: [i, { nested: [i] }] }]));
    const reply = encodeReply(
      {
        requestId: 'a'.repeat(32),
        senderId: 'n1',
        agent: 'rpcutil',
        time: Date.now(),
        payload: encodeAgentReply({ statuscode: 0, statusmsg: 'OK', data: { facts } }),
      },
      'v2',
    );
    const decoded = decodeReply(reply);
    expect(decoded.ok).toBe(true);
    if (decoded.ok) expect(decodeAgentReply(decoded.value.payload)).toMatchObject({ ok: true, value: { data: { facts } } });
  });

  describe('lifecycle events', () => {
    const startup = newLifecycleEvent('startup', { identity: 'n1.example.net', component: 'provision_mode_server', version: '0.29.4' });

    it('reads real events in both formats', () => {
      for (const format of ['choria', 'cloudevents'] as const)
        expect(parseLifecycleEvent(Buffer.from(lifecycleEventJson(startup, format)))).toMatchObject({
          ok: true,
          value: { identity: 'n1.example.net' },
        });
    });

    it('refuses one larger than 64 KiB unread, and one nested past any event, as oversized', () => {
      const long = lifecycleEventJson({ ...startup, version: 'x'.repeat(LIFECYCLE_MAX_BYTES) }, 'choria');
      expect(refusal(parseLifecycleEvent(Buffer.from(long)))).toEqual(['oversized', 'lifecycle']);
      const deep = lifecycleEventJson(startup, 'cloudevents').replace('"datacontenttype"', `"extension":${nested(10)},"datacontenttype"`);
      expect(refusal(parseLifecycleEvent(deep))).toEqual(['oversized', 'lifecycle']);
    });

    it('refuses an identity longer than any node can have: a request to it would make the broker close the connection', () => {
      const named = (identity: string) => lifecycleEventJson({ ...startup, identity }, 'choria');
      expect(parseLifecycleEvent(named('n'.repeat(MAX_IDENTITY_LENGTH))).ok).toBe(true);
      expect(refusal(parseLifecycleEvent(named('n'.repeat(MAX_IDENTITY_LENGTH + 1))))).toEqual(['schema', 'lifecycle']);
    });

    it('says what is not an event in the words it always did', () => {
      expect(refusal(parseLifecycleEvent('not json'))).toEqual(['not_json', 'lifecycle']);
      expect(refusal(parseLifecycleEvent('[{"protocol":"io.choria.lifecycle.v1.startup"}]'))).toEqual(['schema', 'lifecycle']);
      expect(refusal(parseLifecycleEvent('{"protocol":"io.choria.lifecycle.v1.startup","identity":'))).toEqual(['not_json', 'lifecycle']);
    });
  });
});
