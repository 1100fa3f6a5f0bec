// The Choria wire layer's public surface (no I/O here: the NATS side is streams/choria).
export * from './errors';
export * from './protocol/types';
export * from './protocol/subjects';
export { DEFAULT_MAX_BYTES, decodeRequest, decodeReply, encodeRequest, encodeReply, withinTtl } from './protocol/codec';
export type { DecodeOptions, DecodeRequestOptions, EncodeRequestOptions, OutgoingRequest } from './protocol/codec';
export type { V2Security } from './protocol/v2';
export * from './protocol/mcorpc';
export * from './lifecycle';
export * from './backoff';
export * from './retry';
export * from './agents';
export * from './keyTransport';
export * from './badMessages';
