/**
 * The fleet owner's parts, apart from the owner itself (`fleetOwner.ts`): what it runs with, what
 * it takes in and hands on, and its state and actions as the files that carry part of its work
 * see them.
 */
import { SchedulerLike } from 'rxjs';
import { Logger } from '../../logger';
import { EnrichedEvent } from '../model/event';
import { FleetModel, InstanceKey } from '../model/FleetModel';
import { HeldReads } from './heldReads';
import { InstancesServed } from '../model/instancesServed';
import { Answer, LineEntry } from '../pipeline/lineEntry';
import { EnricherMetrics } from '../metrics/metrics';
import { ObservableIncusReader } from '../reads/observableReader';
import { NetworkFanOut } from '../reads/readRequests';
import { Ladder, Repairs } from './repairs';
import { Effect, RouteView } from './route';
import { RoundContext } from '../rounds/round';
import { RoundEnd, RoundInput } from '../rounds/roundFeed';
import { ProjectsServed } from '../model/servedProjects';
import { WantedTable } from '../model/wanted';

/** What the owner runs with. */
export interface FleetOwnerConfig {
  /** The model it owns: nothing else writes it. */
  readonly model: FleetModel;
  readonly reader: ObservableIncusReader;
  readonly wanted: WantedTable;
  readonly projects: ProjectsServed;
  readonly instances: InstancesServed;
  /** Calls to the server at once. */
  readonly workers: number;
  readonly ipTimeout: number;
  readonly ttl: number;
  readonly configExclude: readonly string[];
  /** The model starts warm (loaded from a cold store). */
  readonly warm: boolean;
  readonly scheduler: SchedulerLike;
  readonly logger: Logger;
  readonly metrics: EnricherMetrics;
  /** Repair ladders (defaults in `Repairs`). */
  readonly repairs?: { readonly failures?: Ladder; readonly addresses?: Ladder };
}

/** What the owner takes in: Incus events (debounced), and the round's names, reads and signals. */
export type OwnerInput = RoundInput;

/**
 * What the owner hands on besides the line's entries, for the daemon's state: the model warmed
 * (the wires are known), a round ended, the number of instances waiting for an address changed.
 */
export type OwnerNotice = { readonly kind: 'warm' } | RoundEnd | { readonly kind: 'awaiting-address'; readonly instances: number };

/** The owner's one output stream: entries for the ordered line, in line order, and notices. */
export type OwnerOutput = LineEntry | OwnerNotice;

/** Whether an owner's output is an entry for the line. */
export const isLineEntry = (output: OwnerOutput): output is LineEntry => output instanceof LineEntry;

/** Whether an owner's output is a notice. */
export const isOwnerNotice = (output: OwnerOutput): output is OwnerNotice => !(output instanceof LineEntry);

/**
 * The owner's state and what it can do, for the parts of its work kept in their own files
 * (`landings.ts`, `roundInputs.ts`), which take it from here rather than from the owner's own
 * module. Everything here runs inside the owner's inbox.
 */
export interface Owner {
  readonly config: FleetOwnerConfig;
  readonly model: FleetModel;
  readonly view: RouteView;
  readonly repairs: Repairs;
  readonly held: HeldReads;
  /** Projects with a read in flight. */
  readonly projectReads: Set<string>;
  /** Projects a read found not served (E6). */
  readonly unserved: Set<string>;
  /** The `seq` at which each key was last deleted (E7): an instance read asked for before it is stale. */
  readonly deletedAt: Map<string, number>;
  /** The wires are known. */
  warm: boolean;
  /** The first round's networks have landed (or a cold store was loaded). */
  networksReady: boolean;
  /** The listings the server refused this client (`networks of default`), each warned about once. */
  readonly forbiddenListings: Set<string>;
  /** Hands the line an answered entry (an invented event: no place until it is answered). */
  push(answer: Answer): void;
  /** Hands on a notice (a round's end, the model warming). */
  notify(notice: OwnerNotice): void;
  accept(event: EnrichedEvent): void;
  apply(effect: Effect): void;
  readNetwork(
    project: string,
    owner: string,
    name: string,
    how: { fanOut: NetworkFanOut; event?: EnrichedEvent; entry?: LineEntry; round?: RoundContext; then?: () => void },
  ): void;
  readProject(name: string, round?: RoundContext): void;
  fanOut(instances: readonly InstanceKey[], origin: 'fan-out' | 'repair' | 'ttl', wait?: boolean): void;
  pruneProject(project: string): void;
  projectUnserved(project: string, round?: RoundContext): void;
  /** Asks for the reads parked until `project`'s configuration was known. */
  readParked(project: string): void;
  maybeWarm(): void;
}
