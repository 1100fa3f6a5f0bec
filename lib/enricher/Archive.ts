import { EnrichedEvent, eventsEqual } from './event';

/**
 * The last event emitted about each instance, so an event that says nothing new goes nowhere,
 * whoever sent it.
 *
 * Most of what a busy fleet emits is one of those: a DHCP renewal writes only `volatile.*`, which
 * the record leaves out, so it arrives as an `instance-updated` identical to the last one. And a
 * network change re-reads every instance on the wire: the archive is what makes that one event
 * per instance that actually moved rather than one per instance sitting there.
 *
 * Keyed by project and instance name. A failed event is never filed: what the next read finds is
 * compared with the last answer there was, never with a failure.
 */
export class Archive {
  private readonly last = new Map<string, EnrichedEvent>();

  private static key(project: string, name: string): string {
    return `${project}/${name}`;
  }

  /**
   * Files `event` as the latest about its subject and says whether it differs from the one it
   * replaces (the first is always new).
   *
   * An event from Incus is compared whole, action included: a stop is never absorbed by the update
   * before it. An event the enricher invented (a round's name, a fan-out, a repair, a TTL re-read)
   * is compared on its subject alone: its action is the enricher's own, so "instance-updated"
   * after an Incus "instance-started" that found the same instance is not news.
   */
  changed(event: EnrichedEvent): boolean {
    const key = Archive.key(event.project, event.name);
    const previous = this.last.get(key);
    this.last.set(key, event);
    return !eventsEqual(event, previous, { ignoreAction: event.origin !== 'incus' });
  }

  /** Files `event` without comparing (seeding from the cold store). */
  file(event: EnrichedEvent): void {
    this.last.set(Archive.key(event.project, event.name), event);
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
