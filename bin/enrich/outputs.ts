/**
 * Where the enricher's events go: the in-process consumer (the provisioner, in `provision-incus`),
 * NATS subjects (held in order through a broker outage), a JetStream stream (held until
 * acknowledged) and the state bucket, JSON lines on stdout. Each output is
 * counted on its own, and one failing never keeps an event from the others.
 */
import { Writable } from 'node:stream';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { EnrichDaemonMetrics } from '../../lib/enricher/metrics/daemonMetrics';
import { EnrichedEvent } from '../../lib/enricher/model/event';
import { EventPayload, toPayload } from '../../lib/enricher/output/payload';
import { subjectFor } from '../../lib/enricher/output/subject';
import { Logger } from '../../lib/logger';
import { CredentialWatch } from '../../streams/credentialWatch';
import { LineWriter, lineWriter } from '../../streams/lineWriter';
import { openNatsConnection } from '../../streams/natsConnection';
import { NatsPublisher, PublisherState } from '../../streams/natsPublisher';
import { PublishedEventMetrics } from './publishedEventMetrics';
import type { DurableOutput } from './durableOutput';

/** What {@link enricherOutputs} needs. */
export interface OutputParts {
  logger: Logger;
  metrics: EnrichDaemonMetrics;
  published: PublishedEventMetrics;
  /** The TLS files and `.creds` are read again at every NATS (re)connection. */
  watch: CredentialWatch;
  /** Where `outputs.stdout` lines go. */
  stdout: Writable;
  consumer?: ((payload: EventPayload) => void) | undefined;
  /** The JetStream output (and state bucket), opened by the daemon. */
  durable?: DurableOutput | undefined;
}

/** The outputs, open. */
export interface EnricherOutputs {
  /** Hands one event to every output. Never throws. */
  publish(event: EnrichedEvent): void;
  /** `off` when events are not published to NATS. */
  nats(): PublisherState | 'off';
  /** Events held for NATS. */
  held(): number;
  /** Writes what is buffered and held, then drains NATS (the JetStream output's connection too). */
  close(): Promise<void>;
}

/**
 * Opens the outputs the settings name. NATS is not waited for: until it is reachable, events are
 * held (up to `maxHeld`), keyed by what they are about, and sent in order when it is.
 */
export function enricherOutputs(settings: EnricherSettings, parts: OutputParts): EnricherOutputs {
  const { logger, metrics, published, watch, consumer, durable } = parts;
  const natsSettings = settings.outputs.nats;
  let publisher: NatsPublisher | undefined;
  if (natsSettings !== undefined) {
    const { servers, name, user, password, token, credentials, tls, maxHeld } = natsSettings;
    publisher = new NatsPublisher({
      open: (signal) => openNatsConnection({ servers, name, user, password, token, credentials, tls, signal, watch }, logger),
      maxHeld,
      logger,
      onResult: (result) => metrics.published.labels('nats', result).inc(),
      onHeld: (held) => metrics.natsHeld.set(held),
    });
    publisher.state$.subscribe((state) => metrics.natsConnected.set(state === 'connected' ? 1 : 0));
  }
  const lines: LineWriter | undefined = settings.outputs.stdout ? lineWriter(parts.stdout, logger) : undefined;
  const prefix = natsSettings?.subjectPrefix ?? '';
  const about = (event: EnrichedEvent) => ({ action: event.action, project: event.project, name: event.name });

  const publish = (event: EnrichedEvent): void => {
    let payload: EventPayload;
    let json: string;
    try {
      payload = toPayload(event);
      json = publisher === undefined && lines === undefined && durable === undefined ? '' : JSON.stringify(payload);
    } catch (error) {
      // A bug, not bad input: the event is lost, the daemon is not.
      logger.error({ err: error, ...about(event) }, 'an enriched event could not be serialised');
      return;
    }
    published.count(event);
    try {
      consumer?.(payload);
    } catch (error) {
      // The consumer's bug: logged, and the other outputs still get the event.
      logger.error({ err: error, ...about(event) }, 'the in-process consumer failed on an event');
    }
    // Keyed by what the event is about, so an outage past the hold still ends with its latest word.
    publisher?.publish(subjectFor(prefix, event), json, `${event.project}/${event.kind}/${event.name}`);
    durable?.publish(event, json);
    if (lines !== undefined) metrics.published.labels('stdout', lines.write(json) ? 'sent' : 'failed').inc();
  };

  return {
    publish,
    nats: () => publisher?.currentState ?? 'off',
    held: () => publisher?.heldCount ?? 0,
    close: async () => {
      await lines?.flush();
      await publisher?.close();
      await durable?.close();
    },
  };
}
