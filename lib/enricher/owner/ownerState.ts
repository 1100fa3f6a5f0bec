/**
 * What the fleet owner runs with and what it holds: its configuration, its state, and the view of
 * that state its decisions are made from.
 */
import { SchedulerLike } from 'rxjs';
import { Logger } from '../../logger';
import { EnricherMetrics } from '../metrics/metrics';
import { FleetModel } from '../model/FleetModel';
import { InstancesServed } from '../model/instancesServed';
import { ProjectsServed } from '../model/servedProjects';
import { Enrichment, WantedTable, wants } from '../model/wanted';
import { ObservableIncusReader } from '../reads/observableReader';
import { HeldReads } from './heldReads';
import { Ladder } from './repairs';
import { InstanceRead } from './requests';
import { RouteView } from './route';

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

/** What the owner's decisions look at (`route.ts`, `landings.ts`, `roundInputs.ts`): read, never written. */
export interface OwnerView extends RouteView {
  readonly configExclude: readonly string[];
  /** The `seq` at which each key was last deleted (E7): an instance read asked for before it is stale. */
  readonly deletedAt: ReadonlyMap<string, number>;
  /** The listings the server refused this client (`networks of default`), each warned about once. */
  readonly forbiddenListings: ReadonlySet<string>;
  /** Projects with a read in flight. */
  readonly projectReads: ReadonlySet<string>;
  /** The wires are known. */
  readonly warm: boolean;
  /** The first round's networks have landed (or a cold store was loaded). */
  readonly networksReady: boolean;
}

/** The owner's state. Only the owner's apply writes it, one task at a time. */
export class OwnerState implements OwnerView {
  readonly model: FleetModel;
  readonly wanted: WantedTable;
  readonly projects: ProjectsServed;
  readonly instances: InstancesServed;
  readonly configExclude: readonly string[];
  readonly unserved = new Set<string>();
  readonly deletedAt = new Map<string, number>();
  readonly forbiddenListings = new Set<string>();
  readonly projectReads = new Set<string>();
  /** Instance reads held until warm, or parked until their project's read lands. */
  readonly held = new HeldReads();
  warm: boolean;
  networksReady: boolean;
  private count = 0;

  constructor(config: FleetOwnerConfig) {
    ({
      model: this.model,
      wanted: this.wanted,
      projects: this.projects,
      instances: this.instances,
      configExclude: this.configExclude,
    } = config);
    this.warm = config.warm;
    this.networksReady = config.warm;
  }

  /** The enricher's count of events so far: where a read starting now stands (`Answer.readAt`). */
  get seq(): number {
    return this.count;
  }

  /** The next number in the count, for a read asked for or a delete taken in now. */
  nextSeq(): number {
    return this.count++;
  }
}

/**
 * Whether the owner warms now. Warm needs the wire map whole and every project read landed, so
 * what was held goes out with its networks and its project's configuration. Once warm, never cold
 * again: a reconnect leaves the wires as stale as everything else, which is what the round after
 * it is for.
 */
export function warmsNow(view: OwnerView): boolean {
  return !view.warm && view.networksReady && view.projectReads.size === 0;
}

/**
 * Whether an instance read waits for its project's read, in flight, rather than being asked now:
 * its event wants the project's configuration, which is on its way. Waiting makes one right event
 * rather than an unlabelled one followed by a fan-out's correction.
 */
export function waitsForProject(view: OwnerView, read: InstanceRead): boolean {
  return (
    view.projectReads.has(read.project) &&
    view.model.projectConfig(read.project) == null &&
    wants(view.wanted, read.event.action, Enrichment.project)
  );
}
