import Ajv, { ValidateFunction } from 'ajv';

/**
 * JSON Schemas of every layer rxfleet reads off the wire, after go-choria's
 * `internal/fs/schemas/choria/protocol/v{1,2}` (draft-07 here, compiled once with ajv).
 * Where go-choria's schema and its code disagree, these follow the code, since the code is what
 * real servers send: the v2 reply's `protocol` is `io.choria.protocol.v2.reply` (the Go schema says
 * `…request`), and the v2 secure reply's `signature`/`sender` are optional (`omitempty` in Go,
 * unsigned in provisioning mode).
 */

const filter = {
  type: 'object',
  required: ['fact', 'cf_class', 'identity', 'compound'],
  properties: {
    compound: { type: 'array', items: { type: 'array', items: { type: 'object' } } },
    identity: { type: 'array', items: { type: 'string' } },
    agent: { type: 'array', items: { type: 'string' } },
    cf_class: { type: 'array', items: { type: 'string' } },
    fact: {
      type: 'array',
      items: {
        type: 'object',
        required: ['fact', 'operator', 'value'],
        properties: {
          fact: { type: 'string', minLength: 1 },
          operator: { type: 'string', enum: ['>=', '<=', '<', '>', '!=', '==', '=~'] },
          value: { type: 'string', minLength: 1 },
        },
      },
    },
  },
};

/**
 * A node's identity as a transport header names it (the sender of a reply: discovery's identity).
 * Longer than any host name or certname (DNS allows 253): a longer one cannot be a node, since the
 * subject of a request to it would pass the broker's 4 KiB control line, and the broker answers a
 * PUB that long by closing the connection, every request in flight with it (issue 37).
 */
export const MAX_IDENTITY_LENGTH = 255;
const identity = { type: 'string', minLength: 1, maxLength: MAX_IDENTITY_LENGTH };

const seenBy = { type: 'array', items: { type: 'array', items: { type: 'string' }, minItems: 3, maxItems: 3 } };

export const transportV1Schema = {
  type: 'object',
  required: ['protocol', 'data', 'headers'],
  properties: {
    protocol: { const: 'choria:transport:1' },
    data: { type: 'string' },
    headers: {
      type: 'object',
      properties: {
        'reply-to': { type: 'string', minLength: 1 },
        mc_sender: identity,
        'seen-by': seenBy,
        federation: {
          type: 'object',
          required: ['req'],
          properties: {
            req: { type: 'string', minLength: 32, maxLength: 32 },
            'reply-to': { type: 'string', minLength: 1 },
            target: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    },
  },
};

export const secureRequestV1Schema = {
  type: 'object',
  required: ['protocol', 'message', 'signature', 'pubcert'],
  properties: {
    protocol: { const: 'choria:secure:request:1' },
    message: { type: 'string', minLength: 1 },
    signature: { type: 'string', minLength: 1 },
    pubcert: { type: 'string', minLength: 1 },
  },
};

export const requestV1Schema = {
  type: 'object',
  required: ['protocol', 'message', 'envelope'],
  properties: {
    protocol: { const: 'choria:request:1' },
    message: { type: 'string', minLength: 1 },
    envelope: {
      type: 'object',
      required: ['requestid', 'senderid', 'callerid', 'collective', 'agent', 'ttl', 'time', 'filter'],
      properties: {
        requestid: { type: 'string', minLength: 32, maxLength: 32 },
        senderid: { type: 'string' },
        callerid: { type: 'string', minLength: 1 },
        collective: { type: 'string', minLength: 1 },
        agent: { type: 'string', minLength: 1 },
        ttl: { type: 'integer', minimum: 30 },
        time: { type: 'integer' },
        filter,
      },
    },
  },
};

export const secureReplyV1Schema = {
  type: 'object',
  required: ['protocol', 'message', 'hash'],
  properties: {
    protocol: { const: 'choria:secure:reply:1' },
    message: { type: 'string', minLength: 1 },
    hash: { type: 'string', minLength: 1 },
  },
};

export const replyV1Schema = {
  type: 'object',
  required: ['protocol', 'message', 'envelope'],
  properties: {
    protocol: { const: 'choria:reply:1' },
    message: { type: 'string' },
    envelope: {
      type: 'object',
      required: ['requestid', 'senderid', 'agent', 'time'],
      properties: {
        requestid: { type: 'string', minLength: 32, maxLength: 32 },
        senderid: { type: 'string', minLength: 1 },
        agent: { type: 'string', minLength: 1 },
        time: { type: 'integer' },
      },
    },
  },
};

export const transportV2Schema = {
  type: 'object',
  required: ['protocol', 'data', 'headers'],
  properties: {
    protocol: { const: 'io.choria.protocol.v2.transport' },
    data: { type: 'string' },
    headers: {
      type: 'object',
      properties: {
        reply: { type: 'string' },
        sender: identity,
        trace: seenBy,
        federation: {
          type: 'object',
          properties: {
            request: { type: 'string' },
            reply: { type: 'string' },
            targets: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    },
  },
};

export const secureRequestV2Schema = {
  type: 'object',
  required: ['protocol', 'request', 'signature', 'caller'],
  properties: {
    protocol: { const: 'io.choria.protocol.v2.secure_request' },
    request: { type: 'string', minLength: 1 },
    signature: { type: 'string', minLength: 1 },
    caller: { type: 'string', minLength: 1 },
    signer: { type: 'string' },
  },
};

export const requestV2Schema = {
  type: 'object',
  required: ['protocol', 'message', 'id', 'sender', 'caller', 'collective', 'agent', 'ttl', 'time'],
  properties: {
    protocol: { const: 'io.choria.protocol.v2.request' },
    message: { type: 'string', minLength: 1 },
    id: { type: 'string', minLength: 1 },
    sender: { type: 'string', minLength: 1 },
    caller: { type: 'string', minLength: 1 },
    collective: { type: 'string', minLength: 1 },
    agent: { type: 'string', minLength: 1 },
    ttl: { type: 'integer', minimum: 1 },
    time: { type: 'integer', minimum: 1 },
    filter,
  },
};

export const secureReplyV2Schema = {
  type: 'object',
  required: ['protocol', 'reply', 'hash'],
  properties: {
    protocol: { const: 'io.choria.protocol.v2.secure_reply' },
    reply: { type: 'string', minLength: 1 },
    hash: { type: 'string', minLength: 1 },
    signature: { type: 'string' },
    sender: { type: 'string' },
  },
};

export const replyV2Schema = {
  type: 'object',
  required: ['protocol', 'message', 'request', 'sender', 'agent', 'time'],
  properties: {
    protocol: { const: 'io.choria.protocol.v2.reply' },
    message: { type: 'string' },
    request: { type: 'string', minLength: 1 },
    sender: { type: 'string', minLength: 1 },
    agent: { type: 'string', minLength: 1 },
    time: { type: 'integer' },
  },
};

/** The mcorpc payload of a request: which action of which agent, with what inputs. */
export const agentRequestSchema = {
  type: 'object',
  required: ['agent', 'action'],
  properties: {
    agent: { type: 'string', minLength: 1 },
    action: { type: 'string', minLength: 1 },
    data: { type: ['object', 'null'] },
  },
};

/** The mcorpc payload of a reply. */
export const agentReplySchema = {
  type: 'object',
  required: ['statuscode', 'statusmsg'],
  properties: {
    statuscode: { type: 'integer', minimum: 0 },
    statusmsg: { type: 'string' },
    action: { type: 'string' },
  },
};

// `const` carries the type on its own; union types are how JSON Schema says "an object or null".
const ajv = new Ajv({ allErrors: false, strict: true, strictTypes: false, allowUnionTypes: true });

/**
 * A validator compiled on first use, so loading the protocol costs nothing until a message arrives
 * (ajv's first compile takes a few hundred ms, which every command would otherwise pay at start).
 */
export function lazyValidator<T>(compiler: Ajv, schema: object): ValidateFunction<T> {
  let compiled: ValidateFunction<T> | undefined;
  const validate = ((data: unknown) => (compiled ??= compiler.compile<T>(schema))(data)) as ValidateFunction<T>;
  Object.defineProperty(validate, 'errors', { get: () => compiled?.errors ?? null });
  return validate;
}

/** A validator with the protocol's shared ajv instance (no defaults applied, nothing coerced), compiled on first use. */
export function compileSchema<T>(schema: object): ValidateFunction<T> {
  return lazyValidator<T>(ajv, schema);
}

/** One line describing why the last validation failed. */
export function schemaErrors(validate: ValidateFunction): string {
  return ajv.errorsText(validate.errors, { dataVar: '' }) || 'invalid';
}
