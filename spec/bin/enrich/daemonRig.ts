import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Registry } from 'prom-client';
import { PassThrough } from 'node:stream';
import { Subscription } from '@nats-io/transport-node';
import { EVENT_PAYLOAD_SCHEMA, EventPayload } from '../../../lib/enricher/output/payload';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { waitFor } from '../../helpers/waitFor';

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
const validate = ajv.compile<EventPayload>(EVENT_PAYLOAD_SCHEMA);

/** Why a message is not a valid payload (empty when it is). */
export function payloadProblems(payload: unknown): string[] {
  return validate(payload) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** One message as a consumer sees it. */
export interface Received {
  subject: string;
  text: string;
  payload: EventPayload;
}

/** Everything published under a subject, as a subscriber on a real nats-server receives it. */
export class NatsRecorder {
  private constructor(
    /** Every message so far, in the order received. */
    readonly messages: Received[],
    private readonly connection: FleetConnection,
    private readonly subscription: Subscription,
  ) {}

  static async start(url: string, subject = 'incus.events.>'): Promise<NatsRecorder> {
    const connection = await openNatsConnection({ servers: [url], name: 'spec-recorder' });
    const messages: Received[] = [];
    const subscription = connection.nc.subscribe(subject, {
      callback: (_error, msg) => {
        const text = msg.string();
        messages.push({ subject: msg.subject, text, payload: JSON.parse(text) as EventPayload });
      },
    });
    // The server has the subscription once the flush returns: nothing published after is missed.
    await connection.nc.flush();
    return new NatsRecorder(messages, connection, subscription);
  }

  /** The first message at or after `from` that matches, waiting for it. */
  async next(match: (payload: EventPayload) => boolean, what: string, from = 0, timeoutMs = 60_000): Promise<Received> {
    let found: Received | undefined;
    await waitFor(
      () => (found = this.messages.slice(from).find((m) => match(m.payload))) !== undefined,
      `${what} on NATS (saw ${this.messages
        .slice(from)
        .map((m) => `${m.payload.action} ${m.payload.project}/${m.payload.name}`)
        .join(', ')})`,
      timeoutMs,
    );
    return found as Received;
  }

  async stop(): Promise<void> {
    this.subscription.unsubscribe();
    await this.connection.drain();
  }
}

/** A stand-in for stdout: the lines written to it. */
export function lineSink(): { stream: PassThrough; lines: string[] } {
  const stream = new PassThrough();
  const lines: string[] = [];
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString('utf8')).split('\n');
    rest = parts.pop() ?? '';
    lines.push(...parts);
  });
  return { stream, lines };
}

/** GET on the monitor endpoint. */
export async function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

/** The value of one series (0 when absent). */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const found = values.find((v) => Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want));
  return found?.value ?? 0;
}
