import type { ProtocolError } from './protocolError';

/** Which Choria protocol carried a message: v1 (`choria:*:1`, x509) or v2 (`io.choria.protocol.v2.*`, ed25519 + JWT). */
export type ProtocolVersion = 'v1' | 'v2';

/** One fact comparison of a filter. */
export interface FactFilter {
  fact: string;
  operator: string;
  value: string;
}

/** A request filter; every list applies in an AND fashion except `identity` (OR). */
export interface Filter {
  fact: FactFilter[];
  cf_class: string[];
  agent: string[];
  identity: string[];
  compound: unknown[][];
}

/** A filter with every list present (empty unless given), the shape Go always sends. */
export function newFilter(partial: Partial<Filter> = {}): Filter {
  return { fact: [], cf_class: [], agent: [], identity: [], compound: [], ...partial };
}

/** Caller security material carried by the secure request layer. Provisioning mode sends `insecure`. */
export interface RequestSecurity {
  /** v1: base64 RSA signature, or `insecure`. v2: the signature bytes, base64 on the wire (`insecure` when unsigned). */
  signature: string;
  /** v1: the caller's PEM certificate, or `insecure`. */
  pubcert?: string;
  /** v1: the exact text the signature covers (the request JSON), for a server that verifies it. */
  signed?: string;
  /** v2: the caller's JWT. */
  callerJwt?: string;
  /** v2: a delegated signer's JWT. */
  signerJwt?: string;
}

/** What every request carries, whichever protocol carries it and whichever way it goes. */
export interface RequestFields {
  /** 32 characters in v1. */
  requestId: string;
  /** The identity of the machine that sent it. */
  senderId: string;
  /** Who made it (`choria=<name>`); its MD5 names the reply subject. */
  callerId: string;
  collective: string;
  agent: string;
  /** Seconds the request stays valid either side of `time`. */
  ttl: number;
  /** When it was made, in ms since the epoch (v1 carries whole seconds, v2 nanoseconds). */
  time: number;
  filter: Filter;
  /**
   * The agent payload as text: mcorpc JSON, or `ping` for discovery (base64 already undone where
   * the protocol uses it, in a request decoded).
   */
  payload: string;
  /** Where the node must reply (the transport header, not the NATS reply subject). */
  replyTo: string;
}

/** A request, whichever protocol carried it. */
export interface ChoriaRequest extends RequestFields {
  version: ProtocolVersion;
  security: RequestSecurity;
}

/** A reply, whichever protocol carried it. */
export interface ChoriaReply {
  version: ProtocolVersion;
  requestId: string;
  /** The sender in the reply envelope. */
  senderId: string;
  /** The sender in the transport header (`mc_sender` in v1, `sender` in v2): discovery's identity. */
  sender: string;
  agent: string;
  /** ms since the epoch. */
  time: number;
  /** The agent reply as text. */
  payload: string;
}

/** The result of decoding untrusted bytes: a value, or the reason it was refused. Never thrown. */
export type Decoded<T> = { ok: true; value: T } | { ok: false; error: ProtocolError };
