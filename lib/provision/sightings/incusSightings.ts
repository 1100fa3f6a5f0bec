/**
 * The provisioner's third sighting source: enriched Incus events (what `rxfleet enrich`
 * publishes) in, the Choria identities of instances that have just come up out.
 */
import { Observable, OperatorFunction } from 'rxjs';
import { servesInstance } from '../../enricher/model/instancesServed';
import { InstancePayload, EventPayload } from '../../enricher/output/payload';
import { servedByConfig } from '../../enricher/model/servedProjects';
import { IncusFeedSettings } from './incusFeedConfig';

/**
 * What became of one instance event, each counted in `choria_provisioner_incus_events_total{result}`:
 * - `sighted`: the instance came up (see {@link incusSightings}) and its identity is sighted;
 * - `already_up`: running with an address, but not newly: up when last seen, or first seen up by an
 *   update (the enricher's first round announcing a fleet that was already running);
 * - `not_up`: not running, no global address, or the event carries no instance (a delete, a failed read);
 * - `unselected`: the feed's `projects` or `instances` selector does not match;
 * - `unmapped`: it came up, but the identity template could not be filled (a configuration key it
 *   names is not set) or gave no valid identity.
 */
export type IncusEventResult = 'sighted' | 'already_up' | 'not_up' | 'unselected' | 'unmapped';

/** Every {@link IncusEventResult}, for the series at zero. */
export const INCUS_EVENT_RESULTS: readonly IncusEventResult[] = ['sighted', 'already_up', 'not_up', 'unselected', 'unmapped'];

/** One decision, for the log and the metrics. */
export interface IncusDecision {
  readonly result: IncusEventResult;
  readonly project: string;
  readonly name: string;
  readonly action: string;
  /** When `sighted`. */
  readonly identity?: string;
  /** The first global address (IPv4 before IPv6), when the instance is up. */
  readonly address?: string;
  /** When `unmapped`: why. */
  readonly reason?: string;
}

/** Options for {@link incusSightings}. */
export interface IncusSightingsOptions {
  /** The selectors and the identity template (`rxfleet.incus`). */
  feed: Pick<IncusFeedSettings, 'projects' | 'instances' | 'identity'>;
  /** Told of every decision about an instance event (events of other kinds are not decisions). */
  onDecision?: (decision: IncusDecision) => void;
}

/** Actions after which the instance has just booted: its Choria server starts again. */
const BOOTS = new Set(['instance-started', 'instance-restarted']);

/**
 * What an instance was when last seen: `down` (stopped, or not running for another reason),
 * `paused` (frozen: its processes, the Choria server among them, are kept as they were), `booting`
 * (running, no global address yet), `up` (running with one). A paused instance remembers whether
 * it had come up before the pause, because a resume puts it back where it was: it is not a boot.
 */
type LastSeen = 'down' | 'booting' | 'up' | { paused: 'booting' | 'up' };

/** Whether the instance is frozen (`Frozen`, or `instance-paused`): a pause, not a stop. */
const isPaused = (action: string, instance: InstancePayload): boolean =>
  !instance.running && (instance.status === 'Frozen' || action === 'instance-paused');

/** The first global address of an instance (the enricher keeps global addresses only), IPv4 first. */
export function firstAddress(instance: InstancePayload): string | undefined {
  for (const family of ['ipv4', 'ipv6'] as const) {
    for (const nic of instance.interfaces) if (nic[family].length > 0) return nic[family][0];
  }
  return undefined;
}

/**
 * Turns enriched events into sightings: the identity of each selected instance that **comes up**,
 * that is, an event of kind `instance` with status `ok` whose instance is running and has a global
 * address (IPv4 or IPv6) on a NIC, and either
 * - its action is `instance-started` or `instance-restarted` (it has just booted), or
 * - the instance was last seen stopped, or running without an address since it came up (a later
 *   repair or update carrying its first global address is the moment it comes up).
 *
 * A pause is not a boot: an instance frozen (`instance-paused`, status `Frozen`) and resumed
 * (`instance-resumed`) keeps its processes, so its Choria server is not in provisioning mode and a
 * provisioning cycle would fail. A resume is `already_up` when the instance was up before the
 * pause; when it was still booting, the first address it gains afterwards is its sighting, as if
 * the pause had not been.
 *
 * An update about an instance never seen before (a round's announcement of a running fleet when
 * the enricher starts) is not a start: it is remembered, not sighted. A delete (or an event that
 * finds the instance gone or unserved) forgets it; a rename forgets its old name. The identity is
 * `feed.identity` filled from the instance's name, project and configuration.
 *
 * The projects selector is the enricher's rule (a list, or a marker decided on the event's
 * `project_config`: an event without it is not selected); the instances selectors are matched on
 * the instance's configuration and name. Events of other kinds are passed over without a decision.
 * Memory: one small state per selected instance seen and not deleted. `onDecision` throwing errors the
 * output, as any rxjs callback.
 */
export function incusSightings(options: IncusSightingsOptions): OperatorFunction<EventPayload, string> {
  const { feed, onDecision } = options;
  return (source) =>
    new Observable<string>((subscriber) => {
      // What each instance (`project/name`) was when last seen.
      const wasUp = new Map<string, LastSeen>();
      const keyOf = (project: string, name: string): string => `${project}/${name}`;

      const decide = (event: EventPayload): IncusDecision | undefined => {
        if (event.kind !== 'instance') return undefined;
        const { project, name, action } = event;
        const base = { project, name, action };
        const key = keyOf(project, name);
        if (event.old_name !== undefined) wasUp.delete(keyOf(project, event.old_name));
        if (!servedByConfig(feed.projects, project, event.project_config ?? {})) return { ...base, result: 'unselected' };
        const instance = event.instance;
        if (instance === undefined) {
          // A delete, or an instance read as gone or no longer served, is forgotten; a failed read
          // says nothing about it.
          if (event.status === 'ok') wasUp.delete(key);
          return { ...base, result: 'not_up' };
        }
        if (!servesInstance(feed.instances, name, instance.config)) {
          wasUp.delete(key);
          return { ...base, result: 'unselected' };
        }
        const address = instance.running ? firstAddress(instance) : undefined;
        const before = wasUp.get(key);
        const now = instance.running ? (address !== undefined ? 'up' : 'booting') : 'down';
        if (isPaused(action, instance)) {
          // What it was before the pause is what a resume returns to; a second pause event keeps it.
          const held = typeof before === 'object' ? before.paused : before === 'up' || before === undefined ? 'up' : 'booting';
          wasUp.set(key, { paused: held });
          return { ...base, result: 'not_up' };
        }
        // A resume (or any event while it was paused) picks up where the pause left it.
        const resumedFrom = typeof before === 'object' ? before.paused : before;
        wasUp.set(key, now);
        if (address === undefined) return { ...base, result: 'not_up' };
        const comesUp = BOOTS.has(action) || resumedFrom === 'down' || resumedFrom === 'booting';
        if (!comesUp) return { ...base, result: 'already_up', address };
        const filled = feed.identity.fill({ name, project, config: instance.config });
        return filled.ok
          ? { ...base, result: 'sighted', address, identity: filled.identity }
          : { ...base, result: 'unmapped', address, reason: filled.reason };
      };

      return source.subscribe({
        next: (event) => {
          let decision: IncusDecision | undefined;
          try {
            decision = decide(event);
            if (decision !== undefined) onDecision?.(decision);
          } catch (error) {
            subscriber.error(error);
            return;
          }
          if (decision?.identity !== undefined) subscriber.next(decision.identity);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    });
}
