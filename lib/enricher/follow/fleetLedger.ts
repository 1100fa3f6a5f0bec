/**
 * A consumer's view of the fleet, as state without I/O: each instance's latest record and the last
 * sequence accounted for, built from the state bucket's snapshot and then from the stream's
 * events, each applied once whatever order or how often they come (read-then-follow).
 */
import { EventPayload } from '../output/payload';

/** What a consumer knows of one instance. */
export interface FleetInstance {
  readonly project: string;
  readonly name: string;
  /** The instance's last sequence accounted for (`instance_seq`). */
  readonly seq: number;
  /** The latest event about it that carried its record (before any did, the latest event). */
  readonly event: EventPayload;
}

/** An instance the bucket holds a delete marker for: gone, at this sequence. */
export interface GoneInstance {
  readonly project: string;
  readonly name: string;
  readonly seq: number;
}

/** What {@link FleetLedger.apply} takes: the bucket's snapshot once, then the stream's events. */
export type FleetInput =
  | {
      readonly kind: 'snapshot';
      readonly instances: readonly FleetInstance[];
      readonly gone: readonly GoneInstance[];
      /** The stream sequence the bucket is complete to: the stream is followed from the next one. */
      readonly watermark: number;
    }
  | { readonly kind: 'event'; readonly event: EventPayload; readonly streamSeq: number };

/** What a consumer is told: the fleet once, then each change. */
export type FleetUpdate =
  | {
      readonly kind: 'state';
      /** Every instance, keyed `<project>/<name>` (a copy: it is the consumer's to keep). */
      readonly instances: ReadonlyMap<string, FleetInstance>;
      readonly watermark: number;
    }
  | {
      readonly kind: 'change';
      readonly event: EventPayload;
      readonly streamSeq: number;
      /** The subject now (`undefined` once it is deleted). */
      readonly instance: FleetInstance | undefined;
      /** The subject before (for a rename, the old name's). */
      readonly previous: FleetInstance | undefined;
      /** Sequences between the last one accounted for and this event's: events this consumer will never see. */
      readonly missed: number;
    };

/** `<project>/<name>`: the key of {@link FleetUpdate}'s map. */
export const fleetKey = (project: string, name: string): string => `${project}/${name}`;

/**
 * The view. `apply` decides in one place what an input changes and what the consumer is told:
 * - a snapshot replaces everything (instances, and each key's last sequence, deleted ones too);
 * - an instance event whose `instance_seq` is at or below its key's last sequence was seen
 *   already (in the snapshot, or earlier on the stream): it says nothing (`undefined`);
 * - any other changes its key: a delete removes it, a rename moves it from its old name, an event
 *   with a record replaces it, one without (a failed read) moves the sequence on and keeps the
 *   record; `missed` counts the sequences it skipped over;
 * - events of other kinds, or without a sequence (another publisher's), are not the fleet's: nothing.
 */
export class FleetLedger {
  private readonly instances = new Map<string, FleetInstance>();
  private readonly seqs = new Map<string, number>();
  private started = false;

  /** The update `input` makes, or `undefined` when it says nothing new. */
  apply(input: FleetInput): FleetUpdate | undefined {
    if (input.kind === 'snapshot') {
      this.started = true;
      this.instances.clear();
      this.seqs.clear();
      for (const gone of input.gone) this.seqs.set(fleetKey(gone.project, gone.name), gone.seq);
      for (const instance of input.instances) {
        const key = fleetKey(instance.project, instance.name);
        this.instances.set(key, instance);
        this.seqs.set(key, instance.seq);
      }
      return { kind: 'state', instances: new Map(this.instances), watermark: input.watermark };
    }
    return this.event(input.event, input.streamSeq);
  }

  /** Instances held now. */
  get size(): number {
    return this.instances.size;
  }

  /** Every instance held now. */
  current(): IterableIterator<FleetInstance> {
    return this.instances.values();
  }

  /** Each key's last sequence accounted for (`<project>/<name>`), deleted instances' too. */
  sequences(): ReadonlyMap<string, number> {
    return this.seqs;
  }

  /** Whether a snapshot has been applied. */
  get snapshotTaken(): boolean {
    return this.started;
  }

  private event(event: EventPayload, streamSeq: number): FleetUpdate | undefined {
    const seq = event.instance_seq;
    if (event.kind !== 'instance' || seq === undefined) return undefined;
    const key = fleetKey(event.project, event.name);
    const known = this.seqs.get(key);
    if (known !== undefined && seq <= known) return undefined;
    this.seqs.set(key, seq);
    const missed = seq - (known ?? 0) - 1;
    let previous = this.instances.get(key);
    if (event.old_name !== undefined && event.old_name !== event.name) {
      const oldKey = fleetKey(event.project, event.old_name);
      previous = this.instances.get(oldKey) ?? previous;
      this.instances.delete(oldKey);
    }
    let instance: FleetInstance | undefined;
    if (event.action === 'instance-deleted') this.instances.delete(key);
    else {
      const kept = previous?.event.instance !== undefined && event.instance === undefined ? previous.event : event;
      instance = { project: event.project, name: event.name, seq, event: kept };
      this.instances.set(key, instance);
    }
    return { kind: 'change', event, streamSeq, instance, previous, missed };
  }
}
