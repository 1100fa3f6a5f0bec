/**
 * How the enricher's terms begin: at once without a JetStream output; with one, once the stream
 * (and the state bucket) are checked and what consumers were last told is read back; with
 * `standby`, each time the election is won, and each ends (what is in flight dropped) when it is lost.
 */
import { hostname } from 'node:os';
import { Registry } from 'prom-client';
import { errorMessage } from '../../lib/choria/errors';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { Logger } from '../../lib/logger';
import { StateSnapshot } from '../../streams/jetstream/stateBucket';
import { DurableOutput } from './durableOutput';
import { EnrichHealth } from './health';
import { startStandby } from './standby';
import { Terms } from './terms';

/** What {@link beginTerms} works with. */
export interface TermStartParts {
  settings: EnricherSettings;
  logger: Logger;
  registry: Registry;
  terms: Terms;
  durable: DurableOutput | undefined;
  /** Read for `stopping`; given the standby once its election runs. */
  health: EnrichHealth;
  /** Aborted when the daemon stops: a JetStream output still waiting for NATS gives up. */
  signal: AbortSignal;
  /** The JetStream output cannot start (a stream or bucket missing): the daemon stops, saying why. */
  fail: (why: string) => void;
}

/**
 * Begins the first term, or sets going what begins each one. `enricher_active` says 1 while this
 * instance enriches (from the start without `standby`), and each takeover is counted. A JetStream
 * output that cannot start is logged and fails the daemon, unless it is stopping anyway.
 */
export function beginTerms(parts: TermStartParts): void {
  const { settings, durable, terms, health } = parts;
  if (durable === undefined) terms.begin(undefined);
  else
    void openThenBegin(parts, durable).catch((error: unknown) => {
      if (health.stopping) return;
      parts.logger.error({ err: error }, `the JetStream output cannot start: ${errorMessage(error)}`);
      parts.fail(errorMessage(error));
    });
  if (durable !== undefined && settings.standby === undefined) durable.metrics.active.set(1);
}

// The output opened, then one term reading back what consumers were told, or the standby's election.
async function openThenBegin(parts: TermStartParts, durable: DurableOutput): Promise<void> {
  const { settings, terms, health } = parts;
  await durable.open(parts.signal);
  if (health.stopping) return;
  if (settings.standby === undefined) {
    const told = await durable.begin();
    if (!health.stopping) terms.begin(told);
    return;
  }
  durable.metrics.active.set(0);
  health.standby = await startStandby({
    settings: settings.standby,
    identity: settings.standby.identity ?? hostname(),
    connection: durable.nc,
    stateBucket: (settings.outputs.state as { bucket: string }).bucket,
    registry: parts.registry,
    logger: parts.logger,
    onWon: (snapshot) => void takeOver(parts, durable, snapshot),
    onLost: () => {
      durable.metrics.active.set(0);
      // Both drop what they hold before they return (their waits come after): a term won
      // again at once starts on a clean publisher, which nothing later abandons.
      void durable.end('abandon');
      void terms.end('abandon');
    },
  });
}

// Won: a term starting from the follower's snapshot, unless the election was lost again meanwhile.
async function takeOver(parts: TermStartParts, durable: DurableOutput, snapshot: StateSnapshot | undefined): Promise<void> {
  const { terms, health } = parts;
  const told = await durable.begin(snapshot);
  // Lost again (or stopping) while reading back: nothing was published in this term.
  if (health.stopping || health.standby?.leads() !== true) return void (await durable.end('abandon'));
  durable.metrics.takeovers.inc();
  durable.metrics.active.set(1);
  terms.begin(told);
}
