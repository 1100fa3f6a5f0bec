import type { Ticket } from '@rxfleet/operators';

/**
 * Where a sighting of a node came from, each source counted apart: a broadcast discovery round, a
 * lifecycle startup event, or an enriched Incus event saying its instance came up.
 */
export type SightingSource = 'discovery' | 'event' | 'incus';

/** One sighting of a node in provisioning mode. */
export interface Sighting {
  readonly identity: string;
  readonly via: SightingSource;
  /**
   * Set on a sighting of an identity admission already held when it arrived: admitted, it is a
   * re-admission superseding an old ticket (DECISIONS P1), which upstream would never count.
   */
  readonly readmission?: true;
}

/** A sighting admitted to the queue. */
export type HostTicket = Ticket<Sighting, string>;
