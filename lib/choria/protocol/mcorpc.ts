import { AGENT_BOUNDS } from './bounds';
import { parsePlainJson, refuse } from './layers';
import { agentReplySchema, agentRequestSchema, compileSchema, schemaErrors } from './schemas';
import { Decoded } from './types';
import { definedFields } from '../../definedFields';

/** The agent payload of an RPC request (go-choria mcorpc `RequestMessage`). */
export interface AgentRequest {
  agent: string;
  action: string;
  data: Record<string, unknown>;
}

/** The agent payload of an RPC reply (go-choria mcorpc `Reply`). */
export interface AgentReply<T = unknown> {
  statuscode: number;
  statusmsg: string;
  data: T;
  action?: string;
}

const validRequest = compileSchema<{ agent: string; action: string; data?: Record<string, unknown> | null }>(agentRequestSchema);
const validReply = compileSchema<{ statuscode: number; statusmsg: string; data?: unknown; action?: string }>(agentReplySchema);

/** The JSON a Go RPC client puts in a request's message. */
export function encodeAgentRequest(agent: string, action: string, data: object): string {
  return JSON.stringify({ agent, action, data });
}

/** Parses and validates a request's agent payload. */
export function decodeAgentRequest(payload: string): Decoded<AgentRequest> {
  const parsed = parsePlainJson(payload, 'agent', AGENT_BOUNDS);
  if (!parsed.ok) return parsed;
  if (!validRequest(parsed.value)) return refuse('schema', 'agent', schemaErrors(validRequest));
  const { agent, action, data } = parsed.value;
  return { ok: true, value: { agent, action, data: data ?? {} } };
}

/** The JSON a server puts in a reply's message, its fields in go-choria's order (`action` first). */
export function encodeAgentReply(reply: AgentReply): string {
  return JSON.stringify({
    ...definedFields({ action: reply.action }),
    statuscode: reply.statuscode,
    statusmsg: reply.statusmsg,
    data: reply.data ?? {},
  });
}

/** Parses and validates a reply's agent payload (the `data` is the action's to check). */
export function decodeAgentReply(payload: string): Decoded<AgentReply> {
  const parsed = parsePlainJson(payload, 'agent', AGENT_BOUNDS);
  if (!parsed.ok) return parsed;
  if (!validReply(parsed.value)) return refuse('schema', 'agent', schemaErrors(validReply));
  const { statuscode, statusmsg, data, action } = parsed.value;
  return { ok: true, value: { statuscode, statusmsg, data: data ?? {}, ...definedFields({ action }) } };
}
