import { EnrichedEvent, eventsEqual } from '../model/event';
import { Answer } from '../owner/lineEntry';

/** What the archive does with an answer leaving the line. */
export type Verdict =
  | { readonly out: EnrichedEvent }
  /** Goes nowhere, counted by reason when it came from Incus. */
  | { readonly drop: 'unchanged' | 'unserved' | 'stale' }
  /** Goes nowhere and says nothing: an event the enricher invented that found nothing to say. */
  | { readonly drop: 'silent' };

interface Filed {
  readonly event: EnrichedEvent;
  readonly readAt: number;
}

/**
 * The last event sent about each instance, and the rules that decide, in the order events leave
 * the line, which ones go on.
 *
 * Most of what a busy fleet emits says nothing new: a DHCP renewal writes only `volatile.*`, which
 * the record leaves out, so it arrives as an `instance-updated` identical to the last one; a
 * network change re-reads every instance on the wire. Comparing with the last event *sent* is what
 * makes that one event per instance that actually moved.
 *
 * Deciding in release order, rather than when reads land, is what keeps what leaves from going
 * back in time (DECISIONS E10): an answer the enricher went looking for on its own joins the line
 * when it lands, and may land before a live event's newer answer yet sit behind it; released
 * after it, it is older than what the consumer already has, and goes nowhere.
 *
 * Keyed by project and instance name. A failed event is never filed: what the next read finds is
 * compared with the last answer there was, never with a failure.
 */
export class Archive {
  private readonly last = new Map<string, Filed>();

  private static key(project: string, name: string): string {
    return `${project}/${name}`;
  }

  /**
   * @param filtering An instance filter is on: what carries no record goes out only about an
   * instance the consumer was told of (a delete carries no configuration to match).
   */
  constructor(private readonly filtering = false) {}

  /**
   * Whether `event` differs from the last event sent about its subject (the first always does), and
   * if so files it as the last. An event from Incus is compared whole, action included: a stop is
   * never absorbed by the update before it. An event the enricher invented (a round's name, a
   * fan-out, a repair, a TTL re-read) is compared on its subject alone: its action is the
   * enricher's own, so "instance-updated" after an Incus "instance-started" that found the same
   * instance is not news.
   */
  changed(event: EnrichedEvent, readAt = -Infinity): boolean {
    const key = Archive.key(event.project, event.name);
    const previous = this.last.get(key);
    if (eventsEqual(event, previous?.event, { ignoreAction: event.origin !== 'incus' })) return false;
    this.last.set(key, { event, readAt });
    return true;
  }

  /**
   * The verdict on `answer`, leaving the line now (it goes on, or is dropped, and why):
   * - An answer with an instance record goes on if it is news, and is filed; one whose read began
   *   before that of the last answer sent about the instance is older than it: `stale`.
   * - A delete, a rename (for the old name) and an instance that is no longer served are forgotten;
   *   the last leaves once, bare, if the consumer was told of it, else `unserved`.
   * - An event without a record (a 404, a read made stale by a delete, one whose read never
   *   landed) goes on as it is if it came from Incus; one the enricher invented has nothing to say.
   * - An event whose project is not served (E6): `unserved`.
   */
  judge(answer: Answer): Verdict {
    const { event } = answer;
    if (answer.unservedProject === true) return { drop: 'unserved' };
    if (event.kind !== 'instance') return { out: event };
    const invented = event.origin !== 'incus' && event.origin !== 'prune';
    if (event.status !== 'ok') return invented ? { drop: 'silent' } : { out: event };
    const key = Archive.key(event.project, event.name);
    const knew = this.last.has(key) || (event.oldName !== undefined && this.last.has(Archive.key(event.project, event.oldName)));
    if (event.oldName !== undefined) this.forget(event.project, event.oldName);
    if (event.action === 'instance-deleted' || answer.unserved === true) {
      this.last.delete(key);
      if (knew || (!this.filtering && answer.unserved !== true)) return { out: event };
      return { drop: 'unserved' };
    }
    if (event.instance === undefined) {
      if (invented) return { drop: 'silent' };
      return this.filtering && !knew ? { drop: 'unserved' } : { out: event };
    }
    const readAt = answer.readAt ?? -Infinity;
    const previous = this.last.get(key);
    if (previous !== undefined && readAt < previous.readAt) return { drop: 'stale' };
    return this.changed(event, readAt) ? { out: event } : { drop: 'unchanged' };
  }

  /** Files `event` without comparing (seeding from the cold store). */
  file(event: EnrichedEvent): void {
    this.last.set(Archive.key(event.project, event.name), { event, readAt: -Infinity });
  }

  /** Forgets the subject (deleted, renamed away): whatever is said about the name next is new. */
  forget(project: string, name: string): void {
    this.last.delete(Archive.key(project, name));
  }

  /** Forgets every subject of a project. */
  forgetProject(project: string): void {
    const prefix = `${project}/`;
    for (const key of this.last.keys()) if (key.startsWith(prefix)) this.last.delete(key);
  }

  /** Subjects held. */
  get size(): number {
    return this.last.size;
  }
}
