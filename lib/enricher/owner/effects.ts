/**
 * What the owner's decisions come to. Routing (`route.ts`), a read landing (`landings.ts`) and what
 * a round hands on (`roundInputs.ts`) are pure functions of the owner's state and one input; each
 * returns a {@link Decision}, data that the owner's one apply (`fleetOwner.ts`) carries out. Nothing
 * here does anything, so a reader follows an input through one function and one switch, and a spec
 * checks a decision as a value.
 */
import { InstanceKey } from '../model/FleetModel';
import { NetworkRecord, InstanceRecord } from '../model/records';
import { ProjectOutcome, RoundContext } from '../rounds/round';
import { RoundEnd } from '../rounds/roundFeed';
import { Answer, LineEntry } from './lineEntry';
import { InstanceResult, NetworkFanOut } from './requests';

/** Something to change or set going, carried out in order. */
export type Effect =
  /** A delete deletes: the instance leaves the model, its reads and repairs are cancelled (E7). */
  | { readonly kind: 'forget-instance'; readonly project: string; readonly name: string }
  /** The wire leaves the model and every instance that sat on it is read again. */
  | { readonly kind: 'forget-network'; readonly owner: string; readonly name: string }
  /** The project and its instances leave, each announced as a delete (E4). */
  | { readonly kind: 'prune-project'; readonly project: string }
  /** A listing no longer has the instance: it leaves as an `instance-deleted` of origin `prune` (E5). */
  | { readonly kind: 'prune-instance'; readonly project: string; readonly name: string }
  | { readonly kind: 'read-project'; readonly project: string; readonly round?: RoundContext }
  /**
   * Read these instances again for events of the enricher's own: origin `fan-out` unless a repair
   * or the TTL asks; `wait` (default true): poll for an address if one runs without.
   */
  | {
      readonly kind: 'fan-out';
      readonly instances: readonly InstanceKey[];
      readonly origin?: 'repair' | 'ttl';
      readonly wait?: boolean;
    }
  /**
   * Read a network no event waits on, for a round or for an instance read that found it missing
   * (`followUp`, landed again once this read has).
   */
  | {
      readonly kind: 'read-network';
      readonly project: string;
      readonly owner: string;
      readonly name: string;
      readonly fanOut: NetworkFanOut;
      readonly round?: RoundContext;
      readonly followUp?: InstanceResult;
    }
  /** An instance answer that waited on a network lands again, decided against the model as it is now. */
  | { readonly kind: 'land-instance'; readonly result: InstanceResult }
  | { readonly kind: 'store-instance'; readonly project: string; readonly name: string; readonly record: InstanceRecord }
  /** The instance filter no longer serves it: it leaves the model (no delete: nothing is stale). */
  | { readonly kind: 'drop-instance'; readonly project: string; readonly name: string }
  | { readonly kind: 'store-network'; readonly record: NetworkRecord }
  /** A listing no longer has the wire: it leaves the model silently. */
  | { readonly kind: 'drop-network'; readonly owner: string; readonly name: string }
  /** What the instance is owed next (`repairs.ts`): a repair soon, a repair backing off, the TTL's re-read, nothing. */
  | { readonly kind: 'owe'; readonly key: string; readonly what: 'repair' | 'address' | 'ttl' | 'nothing' }
  /** The project's read landed: it is no longer in flight. */
  | { readonly kind: 'project-read-landed'; readonly project: string }
  /** Served, with this configuration. */
  | { readonly kind: 'project-served'; readonly project: string; readonly config: Readonly<Record<string, string>> }
  /** Known not to be served (E6). */
  | { readonly kind: 'project-unserved'; readonly project: string }
  /** The reads parked on the project's configuration: asked for now, or (`nowhere`) answered as going nowhere (E6). */
  | { readonly kind: 'parked'; readonly project: string; readonly go: 'read' | 'nowhere' }
  /** Tell a round one of its reads landed. */
  | { readonly kind: 'tell-round'; readonly round: RoundContext; readonly landed: 'network' }
  | {
      readonly kind: 'tell-round';
      readonly round: RoundContext;
      readonly landed: 'project';
      readonly project: string;
      readonly outcome: ProjectOutcome;
    }
  /** The first round's networks are in: the wire map is whole. */
  | { readonly kind: 'networks-ready' }
  /** A listing the server refused this client (`networks of default`), or allowed again. */
  | { readonly kind: 'listing'; readonly what: string; readonly refused: boolean }
  /** A round's end, handed on for the daemon's state. */
  | { readonly kind: 'notice'; readonly notice: RoundEnd }
  | { readonly kind: 'log'; readonly level: 'debug' | 'info' | 'warn'; readonly fields: Record<string, unknown>; readonly message: string };

/**
 * An answer for the line: an event's place settled with it (the first answer wins), or, `entry`
 * absent, an event the enricher invented joining the back of the line with it.
 */
export interface Settlement {
  readonly entry?: LineEntry;
  readonly answer: Answer;
}

/** What one input comes to: the effects, carried out first, in order; then the settlements, in order. */
export interface Decision {
  readonly effects: readonly Effect[];
  readonly settlements: readonly Settlement[];
}

/** Nothing to do. Shared, never written. */
export const NOTHING: Decision = { effects: [], settlements: [] };

/** A decision of effects alone. */
export const effectsOnly = (effects: readonly Effect[]): Decision => ({ effects, settlements: NOTHING.settlements });
