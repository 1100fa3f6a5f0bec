import { createHash } from 'node:crypto';
import { encodeReply, encodeRequest } from '../../../lib/choria/protocol/codec';
import { encodeAgentReply, encodeAgentRequest } from '../../../lib/choria/protocol/mcorpc';
import { newFilter } from '../../../lib/choria/protocol/types';
import { lifecycleEventJson, newLifecycleEvent } from '../../../lib/choria/lifecycle';
import { mutateJson, mutateJsonText, mutateText } from './mutate';
import { Rng } from './random';

const ID = 'a'.repeat(32);

/** Valid Choria requests and replies in both protocol versions, and lifecycle events in both formats. */
export function choriaSeeds(): { requests: string[]; replies: string[]; lifecycle: string[] } {
  const request = (version: 'v1' | 'v2'): string =>
    encodeRequest(
      {
        requestId: ID,
        senderId: 'prov.example.net',
        callerId: 'choria=prov.example.net',
        collective: 'provisioning',
        agent: 'rpcutil',
        ttl: 60,
        time: Date.now(),
        filter: newFilter({ agent: ['rpcutil'] }),
        payload: encodeAgentRequest('rpcutil', 'inventory', {}),
        replyTo: `provisioning.reply.x.${ID}`,
      },
      version === 'v1' ? { version: 'v1' } : { version: 'v2', security: { callerJwt: 'a.b.c' } },
    );
  const reply = (version: 'v1' | 'v2', data: object): string =>
    encodeReply(
      {
        requestId: ID,
        senderId: 'n1.example.net',
        agent: 'rpcutil',
        time: Date.now(),
        payload: encodeAgentReply({ statuscode: 0, statusmsg: 'OK', data }),
      },
      version,
    );
  const inventory = {
    agents: ['rpcutil', 'choria_provision'],
    collectives: ['provisioning'],
    facts: {},
    version: '0.29.4',
    upgradable: true,
    main_collective: 'provisioning',
  };
  const event = (type: 'startup' | 'shutdown', format: 'choria' | 'cloudevents'): string =>
    lifecycleEventJson(
      newLifecycleEvent(type, { identity: 'n1.example.net', component: 'provision_mode_server', version: '0.29.4' }),
      format,
    );
  return {
    requests: [request('v1'), request('v2')],
    replies: [reply('v1', inventory), reply('v2', inventory), reply('v1', { jwt: 'a.b.c', ecdh_public: 'ab'.repeat(32) })],
    lifecycle: [event('startup', 'choria'), event('startup', 'cloudevents'), event('shutdown', 'cloudevents')],
  };
}

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string): string => Buffer.from(text, 'base64').toString('utf8');

/**
 * A Choria message mutated at one of its layers: the transport, the secure layer inside its base64
 * `data`, or the request/reply inside that layer's `message` (the hash recomputed most of the time,
 * so the mutation reaches the layers behind the hash check), or the agent payload inside that.
 */
export function mutateChoria(rng: Rng, text: string): string {
  let transport: Record<string, unknown>;
  try {
    transport = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return mutateText(rng, text);
  }
  const depth = rng.int(0, 3);
  if (depth === 0 || typeof transport.data !== 'string') return JSON.stringify(mutateJson(rng, transport));
  let secure: Record<string, unknown>;
  try {
    secure = JSON.parse(unb64(transport.data)) as Record<string, unknown>;
  } catch {
    return mutateText(rng, text);
  }
  // v2 carries the inner layer as base64 bytes in `request` or `reply`.
  const v2Field = typeof secure.request === 'string' ? 'request' : typeof secure.reply === 'string' ? 'reply' : undefined;
  if (depth > 1 && v2Field !== undefined) {
    const inner = mutateJsonText(rng, unb64(secure[v2Field] as string));
    secure[v2Field] = b64(inner);
    if (typeof secure.hash === 'string' && rng.bool(0.85)) secure.hash = createHash('sha256').update(inner).digest('base64');
    transport.data = b64(JSON.stringify(secure));
    return JSON.stringify(transport);
  }
  if (depth === 1 || typeof secure.message !== 'string') {
    transport.data = rng.bool(0.8) ? b64(JSON.stringify(mutateJson(rng, secure))) : mutateText(rng, transport.data);
    return JSON.stringify(transport);
  }
  let message = secure.message;
  if (depth === 2) message = mutateJsonText(rng, message);
  else {
    // The agent payload: `message` inside a reply, `payload`/`data` inside a request (raw or base64).
    try {
      const inner = JSON.parse(message) as Record<string, unknown>;
      for (const key of ['message', 'payload', 'data']) {
        if (typeof inner[key] === 'string') {
          inner[key] = mutateJsonText(rng, inner[key] as string);
          break;
        }
      }
      message = JSON.stringify(inner);
    } catch {
      message = mutateText(rng, message);
    }
  }
  secure.message = message;
  if (typeof secure.hash === 'string' && rng.bool(0.85)) secure.hash = createHash('sha256').update(message).digest('base64');
  transport.data = b64(JSON.stringify(secure));
  return JSON.stringify(transport);
}
