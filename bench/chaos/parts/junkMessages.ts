/**
 * The junk a hostile or broken client sends a provisioner or an enricher, each kind a mix of five
 * shapes, taken in turn: text that is not JSON, JSON that is not an object, objects missing fields,
 * objects with fields of the wrong type, and oversized values (several hundred KB: a long string,
 * or arrays nested to a great depth). Every one is junk to any decoder, old or new: an oversized
 * value sits in an object that also misses a field or has one of the wrong type, so a decoder
 * without size bounds refuses it too, only later. Payloads are built once and reused, so sending
 * them costs the sender nothing but the send. The enricher's junk ({@link incusJunk}) has shapes of its own.
 */

/** The five shapes, in the order the pools cycle through them. */
export const JUNK_SHAPES = ['not_json', 'not_object', 'missing_fields', 'wrong_types', 'oversized'] as const;
export type JunkShape = (typeof JUNK_SHAPES)[number];

/** One pool: payloads to cycle through, each with its shape. */
export interface JunkPool {
  payloads: Array<{ shape: string; bytes: Uint8Array; text: string }>;
}

/** How big the oversized values are. */
export interface JunkSizes {
  /** A long string value, KiB. Default 300. */
  stringKiB?: number;
  /** Arrays nested this deep (two bytes per level). Default 150,000 (300 KB). */
  depth?: number;
}

const encoder = new TextEncoder();

function pool<S extends string>(shapes: readonly S[], byShape: Record<S, string[]>): JunkPool {
  // Interleaved so that any run of consecutive payloads as long as the shapes holds one of each.
  const longest = Math.max(...shapes.map((s) => byShape[s].length));
  const payloads: JunkPool['payloads'] = [];
  for (let i = 0; i < longest; i++)
    for (const shape of shapes) {
      const text = byShape[shape][i % byShape[shape].length];
      payloads.push({ shape, bytes: encoder.encode(text), text });
    }
  return { payloads };
}

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** Junk startup events for `choria.lifecycle.event.startup.<component>`. */
export function lifecycleJunk(sizes: JunkSizes = {}): JunkPool {
  const long = 'x'.repeat((sizes.stringKiB ?? 300) * 1024);
  const deep = nested(sizes.depth ?? 150_000);
  const startup = '"protocol":"io.choria.lifecycle.v1.startup"';
  return pool(JUNK_SHAPES, {
    not_json: ['junk', `{${startup},"identity":`, `{${startup},"identity":"n1.example.net",}`, '{protocol: startup}'],
    not_object: ['[1,2,3]', '"io.choria.lifecycle.v1.startup"', '42', `[{${startup}}]`],
    missing_fields: [
      `{${startup},"identity":"n1.example.net"}`,
      '{}',
      '{"specversion":"1.0","source":"io.choria.lifecycle","id":"e1","type":"io.choria.lifecycle.v1.startup"}',
      `{${startup},"id":"e1","component":"provision_mode_server","timestamp":1700000000}`,
    ],
    wrong_types: [
      `{${startup},"id":1,"identity":["n1.example.net"],"component":{},"timestamp":"now"}`,
      `{${startup},"id":"e1","identity":"n1.example.net","component":"provision_mode_server","timestamp":"1700000000"}`,
      '{"specversion":"1.0","source":"io.choria.lifecycle","id":"e1","type":"io.choria.lifecycle.v1.startup","data":"n1"}',
      '{"protocol":42}',
    ],
    oversized: [
      // No timestamp: junk even where the identity's length is not checked.
      `{${startup},"id":"e1","identity":"${long}","component":"provision_mode_server"}`,
      `{${startup},"id":"e1","identity":${deep},"component":"provision_mode_server","timestamp":1700000000}`,
      `{"specversion":"1.0","source":"io.choria.lifecycle","id":"e1","type":"io.choria.lifecycle.v1.startup","data":"${long}"}`,
      `{${startup},"id":"e1","identity":"n1.example.net","component":"provision_mode_server","timestamp":1700000000,"version":${deep}}`,
    ],
  });
}

/** Junk replies, for a request's reply subject, the reply prefix or a discovery round. */
export function replyJunk(sizes: JunkSizes = {}): JunkPool {
  const kib = (sizes.stringKiB ?? 300) * 1024;
  const deep = nested(sizes.depth ?? 150_000);
  // Valid base64 of text that is not a secure reply: refused only after it is decoded.
  const base64 = Buffer.from('n'.repeat(Math.floor((kib * 3) / 4))).toString('base64');
  const transport = '"protocol":"choria:transport:1"';
  return pool(JUNK_SHAPES, {
    not_json: [
      'this is not a Choria reply',
      `{${transport},"data":"e30=","headers":{"mc_sender":`,
      '{"protocol":"choria:transport:1",}',
      'pong',
    ],
    not_object: ['["choria:transport:1"]', '"pong"', '1', 'null'],
    missing_fields: [`{${transport},"headers":{}}`, `{${transport},"data":"e30="}`, '{"data":"e30=","headers":{"mc_sender":"x"}}', '{}'],
    wrong_types: [
      `{${transport},"data":123,"headers":[]}`,
      `{${transport},"data":"!!not base64!!","headers":{"mc_sender":"x"}}`,
      '{"protocol":"io.choria.protocol.v2.transport","data":"e30=","headers":{"sender":7}}',
      `{${transport},"data":"e30=","headers":{"mc_sender":"x","seen-by":"x"}}`,
    ],
    oversized: [
      `{${transport},"data":"${base64}","headers":{"mc_sender":"intruder.example.net"}}`,
      `{${transport},"data":${deep},"headers":{"mc_sender":"intruder.example.net"}}`,
      `{${transport},"data":"e30=","headers":{"mc_sender":"intruder.example.net","seen-by":${deep}}}`,
      `{${transport},"data":"!${'A'.repeat(kib)}","headers":{"mc_sender":"intruder.example.net"}}`,
    ],
  });
}

/**
 * The shapes of junk on an Incus events websocket, as issue 37 names them (invalid JSON, unknown
 * types, missing metadata), with JSON that is no object and frames nested deep beside them.
 */
export const INCUS_JUNK_SHAPES = ['not_json', 'not_object', 'unknown_type', 'missing_metadata', 'too_deep'] as const;

/**
 * Junk frames for an enricher's events websocket. None is an event the enricher acts on: each is
 * malformed, or of a type it ignores, or a lifecycle frame without an action.
 */
export function incusJunk(options: { depth?: number } = {}): JunkPool {
  const deep = nested(options.depth ?? 2000);
  const at = '"timestamp":"2026-12-04T10:11:25.939898892Z"';
  return pool(INCUS_JUNK_SHAPES, {
    not_json: [
      'junk',
      `{"type":"lifecycle",${at},"metadata":{"action":"instance-started","source":`,
      '{type: lifecycle}',
      '{"type":"lifecycle",}',
    ],
    not_object: ['["lifecycle"]', '"lifecycle"', '42', 'null'],
    unknown_type: [
      `{"type":"logging",${at},"metadata":{"message":"Handling API request","level":"debug","context":{"method":"GET","url":"/1.0"}},"location":"none","project":""}`,
      `{"type":"operation",${at},"metadata":{"id":"6916c8a6-9b4b-4c0e-b5a8-6f7a2c7d1e2f","class":"task","status":"Running","status_code":103},"location":"none","project":"default"}`,
      `{"type":"exploded",${at},"metadata":{}}`,
      '{"type":7,"metadata":{}}',
    ],
    missing_metadata: [
      `{"type":"lifecycle",${at},"location":"none","project":"default"}`,
      `{"type":"lifecycle",${at},"metadata":[],"project":"default"}`,
      `{"type":"lifecycle",${at},"metadata":{"action":"instance-started"},"project":"default"}`,
      `{"type":"lifecycle",${at},"metadata":{"source":"/1.0/instances/c1"},"project":"default"}`,
    ],
    too_deep: [`{"type":"lifecycle",${at},"metadata":${deep}}`, `{"type":"logging",${at},"metadata":{"context":${deep}}}`],
  });
}

/** The payload at position `n` of a pool (cycling). */
export function junkAt(junk: JunkPool, n: number): Uint8Array {
  return junk.payloads[n % junk.payloads.length].bytes;
}

/** The payload at position `n` of a pool (cycling), as text (a websocket's text frame). */
export function junkTextAt(junk: JunkPool, n: number): string {
  return junk.payloads[n % junk.payloads.length].text;
}
