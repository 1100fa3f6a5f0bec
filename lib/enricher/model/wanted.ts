/**
 * The wanted-actions table: which Incus lifecycle actions enter the enricher at all, what each
 * consumer asks to have attached to them, and which of them a burst may collapse.
 *
 * An action nobody names is dropped at the door, before it costs anything. What is read is what
 * somebody asked for, once, whoever asked: the table is the union of every consumer's wants, so
 * one action is one lookup and one read plan.
 */

/** What may be attached to an event, as bits so a union is an `|`. */
export const Enrichment = {
  /** The instance the event is about, as the model holds it after a read. */
  instance: 1,
  /** Its interfaces, each placed on a known network, with their addresses. */
  interfaces: 2,
  /** The network the event is about (DECISIONS E8). */
  network: 4,
  /** The owning project's own configuration, from what the model holds. */
  project: 8,
} as const;

/** One enrichment's name. */
export type EnrichmentName = keyof typeof Enrichment;

/** The enrichment names in bit order, for payloads and schemas. */
export const ENRICHMENT_NAMES: readonly EnrichmentName[] = ['instance', 'interfaces', 'network', 'project'];

/** One consumer's want for one action. */
export interface Want {
  /** An Incus lifecycle action, e.g. `instance-started`. */
  action: string;
  /** Bits of {@link Enrichment}; 0 asks only that the action enter. */
  enrich: number;
  /** Whether a burst of this action on one subject may be collapsed to its first and last. */
  debounce: boolean;
}

/** The union of every consumer's wants, one entry per action. */
export type WantedTable = ReadonlyMap<string, Readonly<Want>>;

/**
 * Folds consumers' wants into one table, in the order given: the first want of an action is
 * taken as it is, and each later one ORs its enrichment in (more reads win: someone needs them)
 * and ANDs its debounce (any consumer that must see every event vetoes collapsing).
 */
export function unionWants(...consumers: readonly (readonly Want[])[]): WantedTable {
  const table = new Map<string, Want>();
  for (const wants of consumers) {
    for (const want of wants) {
      const held = table.get(want.action);
      if (held === undefined) table.set(want.action, { ...want });
      else table.set(want.action, { action: want.action, enrich: held.enrich | want.enrich, debounce: held.debounce && want.debounce });
    }
  }
  return table;
}

/** The bits of `names`. */
export function enrichmentBits(names: readonly EnrichmentName[]): number {
  return names.reduce((bits, name) => bits | Enrichment[name], 0);
}

/** The names of the bits set in `bits`, in bit order. */
export function enrichmentNames(bits: number): EnrichmentName[] {
  return ENRICHMENT_NAMES.filter((name) => (bits & Enrichment[name]) !== 0);
}

/** Whether `table` asks for every bit of `bits` on `action`. */
export function wants(table: WantedTable, action: string, bits: number): boolean {
  const want = table.get(action);
  return want !== undefined && (want.enrich & bits) === bits;
}

/**
 * What the enricher itself needs to enter, with nothing attached. Its own dispatch acts on
 * profile and project changes, and an action nobody names never reaches it: without these a
 * profile change would reach its instances only when the next round read them.
 *
 * `profile-updated` may collapse (a profile has no history an update could lose, and each one
 * costs a read per instance using it, so the last of a burst is the one worth paying for);
 * `profile-deleted` may not (a delete lost in a burst is a delete lost). `project-updated` is
 * rxfleet's addition: it refreshes the project's configuration (labels, served marker) at once
 * rather than at the next round.
 */
export const ENRICHER_OWN_WANTS: readonly Want[] = [
  { action: 'profile-updated', enrich: 0, debounce: true },
  { action: 'profile-deleted', enrich: 0, debounce: false },
  { action: 'project-updated', enrich: 0, debounce: true },
];

const INSTANCE_FULL = Enrichment.instance | Enrichment.interfaces | Enrichment.project;

/**
 * The daemon's default consumer: every instance lifecycle action with the instance, its
 * interfaces and its project attached; network changes with the network (E8); deletes with the
 * project only (there is nothing left to read). Only updates collapse: a start, stop or rename
 * in a burst is a fact of its own.
 */
export const DEFAULT_DAEMON_WANTS: readonly Want[] = [
  { action: 'instance-created', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-started', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-restarted', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-stopped', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-shutdown', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-paused', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-resumed', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-updated', enrich: INSTANCE_FULL, debounce: true },
  { action: 'instance-renamed', enrich: INSTANCE_FULL, debounce: false },
  { action: 'instance-deleted', enrich: Enrichment.project, debounce: false },
  { action: 'network-created', enrich: Enrichment.network, debounce: false },
  { action: 'network-updated', enrich: Enrichment.network, debounce: true },
  { action: 'network-renamed', enrich: Enrichment.network, debounce: false },
  { action: 'network-deleted', enrich: 0, debounce: false },
];

/** The table the daemon runs with: its consumer's wants (default {@link DEFAULT_DAEMON_WANTS}) and the enricher's own. */
export function daemonWanted(consumer: readonly Want[] = DEFAULT_DAEMON_WANTS): WantedTable {
  return unionWants(consumer, ENRICHER_OWN_WANTS);
}
