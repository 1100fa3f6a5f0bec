import { Counter, Registry, Summary } from 'prom-client';
import { ProtocolError } from './errors';
import { ProtocolVersion } from './protocol/types';

/**
 * What go-choria's connector counts of its NATS connection (`choria/connection.go`), under its
 * names and help, each a counter without labels (its summary has no quantiles: `_sum` and
 * `_count`), every one at zero from construction (DECISIONS P2), as go-choria registers them at
 * start. The daemon's connection tells it what happens ({@link ConnectorEvents}).
 */
export class ConnectorMetrics implements ConnectorEvents {
  private readonly initialAttempts: Counter;
  private readonly reconnections: Counter;
  private readonly closedCounter: Counter;
  private readonly errors: Counter;
  private readonly initialConnectTime: Summary;

  constructor(registry: Registry) {
    const registers = [registry];
    this.initialAttempts = new Counter({
      name: 'choria_connector_initial_connection_attempts',
      help: 'How many connection attempts were made before a connection was established',
      registers,
    });
    this.reconnections = new Counter({
      name: 'choria_connector_reconnections',
      help: 'Number of times the connector reconnected to the middleware',
      registers,
    });
    this.closedCounter = new Counter({
      name: 'choria_connector_connection_closed',
      help: 'Number of times the connection was closed',
      registers,
    });
    this.errors = new Counter({ name: 'choria_connector_errors', help: 'Number of times the connection encountered an error', registers });
    this.initialConnectTime = new Summary({
      name: 'choria_connector_initial_connect_time',
      help: 'How long it took to establish the initial connection',
      percentiles: [],
      registers,
    });
    for (const counter of [this.initialAttempts, this.reconnections, this.closedCounter, this.errors]) counter.inc(0);
  }

  initialAttemptFailed(): void {
    this.initialAttempts.inc();
  }

  initiallyConnected(seconds: number): void {
    this.initialConnectTime.observe(seconds);
  }

  reconnected(): void {
    this.reconnections.inc();
  }

  closed(): void {
    this.closedCounter.inc();
  }

  error(): void {
    this.errors.inc();
  }
}

/**
 * The moments a NATS connection tells go-choria's connector metrics about, in its handlers' terms:
 * a failed attempt at the first connection (counted as go-choria counts its tries), the first
 * connection made (the time from the first attempt), a reconnection, the connection closed for
 * good, and an asynchronous error from the server (a permissions violation, a slow consumer).
 */
export interface ConnectorEvents {
  initialAttemptFailed(): void;
  initiallyConnected(seconds: number): void;
  reconnected(): void;
  closed(): void;
  error(): void;
}

/** How a Choria message received fared in go-choria's protocol counters. */
export type ProtocolOutcome = 'valid' | 'invalid' | 'schema' | 'unparsable' | 'error';

/**
 * What go-choria's protocol package counts when a reply's layers are decoded (its v1 and v2
 * `schemaValidate` and `SecureReply.Valid`): `valid` when the secure reply's hash matches; an
 * `invalid` hash (invalid only); JSON that does not parse (`unparsable`: a parse failure and a
 * protocol error); a layer that breaks its schema (`schema`: invalid and a protocol error);
 * anything else that stops the decode (bad base64, too big) a protocol error.
 */
export function protocolOutcome(error: ProtocolError | undefined): ProtocolOutcome {
  if (error === undefined) return 'valid';
  if (error.reason === 'hash') return 'invalid';
  if (error.reason === 'not_json') return 'unparsable';
  if (error.reason === 'schema' || error.reason === 'protocol') return 'schema';
  return 'error';
}

/**
 * go-choria's protocol counters (`protocol/stats/stats.go`) under its names, help and `version`
 * label (`1` or `2`, the protocol the client speaks): `choria_protocol_valid`, `_invalid`,
 * `_json_parse_failures` and `_error`. The daemon's version's series exist at zero from the start
 * (DECISIONS P2; go-choria creates them at first use).
 */
export class ProtocolMetrics {
  private readonly valid: Counter<'version'>;
  private readonly invalid: Counter<'version'>;
  private readonly unparsable: Counter<'version'>;
  private readonly errors: Counter<'version'>;
  private readonly version: string;

  constructor(registry: Registry, version: ProtocolVersion) {
    const registers = [registry];
    this.version = version === 'v1' ? '1' : '2';
    const counter = (name: string, help: string): Counter<'version'> => new Counter({ name, help, labelNames: ['version'], registers });
    this.unparsable = counter('choria_protocol_json_parse_failures', 'Amount of times un-parsable JSON was received');
    this.valid = counter('choria_protocol_valid', 'Number of messages with valid signatures');
    this.invalid = counter('choria_protocol_invalid', 'Number of messages with invalid signatures');
    this.errors = counter(
      'choria_protocol_error',
      'Number of protocol errors such as missing certificate, un-parsable files and other unrecoverable errors',
    );
    for (const c of [this.unparsable, this.valid, this.invalid, this.errors]) c.inc({ version: this.version }, 0);
  }

  /** One received message's outcome, counted as go-choria counts it. */
  observe(outcome: ProtocolOutcome): void {
    const labels = { version: this.version };
    if (outcome === 'valid') this.valid.inc(labels);
    else if (outcome === 'invalid') this.invalid.inc(labels);
    else if (outcome === 'schema') {
      this.invalid.inc(labels);
      this.errors.inc(labels);
    } else if (outcome === 'unparsable') {
      this.unparsable.inc(labels);
      this.errors.inc(labels);
    } else this.errors.inc(labels);
  }
}
