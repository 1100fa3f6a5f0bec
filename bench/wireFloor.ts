/**
 * The Choria v1 protocol's own floor, for `bench:wire`: a request/reply over raw nats.js where each
 * side does only the work the protocol's shape forces on any implementation, and nothing rxfleet
 * adds (no schema, no routing of replies, no Observables, no timers of its own). The requester
 * stringifies the three request layers (agent payload inside request inside secure request) and
 * base64s the secure layer into the transport; the responder parses all of that back, and answers
 * with the three reply layers, the reply's SHA-256 and base64; the requester parses the reply's
 * layers and checks the hash. What rxfleet's codec and client cost beyond this is theirs; what
 * this costs beyond raw request/reply is the protocol's.
 */
import { hash } from 'node:crypto';
import { NatsConnection } from '@nats-io/transport-node';

const utf8 = (data: Uint8Array): string => Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const unbase64 = (text: string): string => Buffer.from(text, 'base64').toString('utf8');

interface Layer {
  protocol: string;
  message: string;
  envelope: { requestid: string; senderid: string; agent: string };
}

/**
 * Starts the floor's responder on `subject` (answering with `replyData` as the agent's data) and
 * returns one call of the floor, resolving once the reply's layers are parsed and its hash checked.
 */
export function protocolFloor(
  requester: NatsConnection,
  responder: NatsConnection,
  subject: string,
  replyData: unknown,
): { call: (requestId: string, identity: string) => Promise<void>; ready: Promise<void> } {
  responder.subscribe(subject, {
    callback: (_error, msg) => {
      const transport = JSON.parse(utf8(msg.data)) as { data: string; headers: Record<string, string> };
      const secure = JSON.parse(unbase64(transport.data)) as { message: string };
      const request = JSON.parse(secure.message) as Layer & { envelope: { requestid: string } };
      JSON.parse(request.message);
      const body = JSON.stringify({
        protocol: 'choria:reply:1',
        message: JSON.stringify({ statuscode: 0, statusmsg: 'OK', data: replyData }),
        envelope: { requestid: request.envelope.requestid, senderid: 'node', agent: request.envelope.agent, time: 0 },
      });
      const secureReply = JSON.stringify({ protocol: 'choria:secure:reply:1', message: body, hash: hash('sha256', body, 'base64') });
      msg.respond(JSON.stringify({ protocol: 'choria:transport:1', data: base64(secureReply), headers: { mc_sender: 'node' } }));
    },
  });
  const call = async (requestId: string, identity: string): Promise<void> => {
    const request = JSON.stringify({
      protocol: 'choria:request:1',
      message: JSON.stringify({ agent: 'rpcutil', action: 'inventory', data: {} }),
      envelope: {
        requestid: requestId,
        senderid: 'bench-provisioner.example.net',
        callerid: 'choria=bench-provisioner.example.net',
        collective: 'provisioning',
        agent: 'rpcutil',
        ttl: 60,
        time: Math.floor(Date.now() / 1000),
        filter: { fact: [], cf_class: [], agent: ['rpcutil'], identity: [identity], compound: [] },
      },
    });
    const secure = JSON.stringify({ protocol: 'choria:secure:request:1', message: request, signature: 'insecure', pubcert: 'insecure' });
    const transport = JSON.stringify({
      protocol: 'choria:transport:1',
      data: base64(secure),
      headers: { 'reply-to': 'bench.floor.reply', mc_sender: 'bench-provisioner.example.net' },
    });
    const reply = await requester.request(subject, transport, { timeout: 5000 });
    const replyTransport = JSON.parse(utf8(reply.data)) as { data: string };
    const secureReply = JSON.parse(unbase64(replyTransport.data)) as { message: string; hash: string };
    if (hash('sha256', secureReply.message, 'base64') !== secureReply.hash) throw new Error('floor: hash mismatch');
    JSON.parse((JSON.parse(secureReply.message) as Layer).message);
  };
  return { call, ready: responder.flush() };
}
