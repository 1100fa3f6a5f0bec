import { Counter, Registry } from 'prom-client';
import { EnrichedEvent } from '../../lib/enricher/model/event';

/**
 * `enricher_events_published_total{kind, action, status}`: every enriched event the daemon hands
 * to its outputs, by what happened (`instance-started`...) and how it went (`ok`, `failed`), the
 * series a dashboard's "events by action" reads. The labels are bounded: actions are the Incus
 * lifecycle actions the wanted-actions table lets in, and kinds and statuses are fixed sets.
 */
export class PublishedEventMetrics {
  private readonly published: Counter<'kind' | 'action' | 'status'>;

  constructor(registry: Registry) {
    this.published = new Counter({
      name: 'enricher_events_published_total',
      help: 'Enriched events handed to the outputs, by kind, action and status',
      labelNames: ['kind', 'action', 'status'],
      registers: [registry],
    });
  }

  /** Counts one event on its way to the outputs. */
  count(event: EnrichedEvent): void {
    this.published.labels(event.kind, event.action, event.status).inc();
  }
}
