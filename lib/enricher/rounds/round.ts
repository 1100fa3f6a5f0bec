/**
 * One round over the fleet, by name: what to read, in which order, and what to prune.
 *
 * Names, never recursive listings: projects, then each network owner's networks, then each
 * served project's instances, a read per name. Two phases before the instances because the wire
 * map has to be whole before an instance is placed on it. The script only lists and hands names
 * on; the enricher reads each name (through the same workers and per-key reads as everything
 * else) and tells the round when they landed, through the {@link RoundContext} the names carry,
 * as a worker tells a ticket. `pacedSweep` paces the names and runs the rounds (`roundFeed.ts`).
 */
import { EMPTY, Observable, Subject, catchError, concat, concatMap, defer, from, mergeMap } from 'rxjs';
import { ObservableIncusReader } from '../reads/observableReader';
import { isTrue } from '../model/records';

/** One name a round hands on: the enricher reads it. */
export type RoundItem =
  | { readonly kind: 'project'; readonly name: string }
  | { readonly kind: 'network'; readonly owner: string; readonly name: string }
  | { readonly kind: 'instance'; readonly project: string; readonly name: string };

/** How a round's read of a project ended. */
export type ProjectOutcome =
  /** Served: its configuration is known. */
  | { readonly status: 'served'; readonly config: Readonly<Record<string, string>> }
  /** Read (or known by name) and not served. */
  | { readonly status: 'unserved' }
  /** The read failed: still served (a project is never pruned on a failed read), configuration as last held. */
  | { readonly status: 'failed'; readonly config: Readonly<Record<string, string>> | null | undefined }
  /** It no longer exists. */
  | { readonly status: 'gone' };

/** The model's keys, as a round records them when a listing goes out (E5). */
export interface RoundView {
  projectNames(): string[];
  networkNames(owner: string): string[];
  instanceNames(project: string): string[];
}

/**
 * What a round tells the enricher as it happens, rather than paced like its names: a listing
 * answered (prune what was recorded and is not listed), every network landed (the wire map is
 * whole), a listing failed (that scope is skipped and nothing in it is pruned).
 */
export type RoundSignal =
  | {
      readonly kind: 'listed';
      readonly round: RoundContext;
      readonly scope: 'projects';
      readonly listed: readonly string[];
      readonly recorded: readonly string[];
    }
  | {
      readonly kind: 'listed';
      readonly round: RoundContext;
      readonly scope: 'networks';
      readonly owner: string;
      readonly listed: readonly string[];
      readonly recorded: readonly string[];
    }
  | {
      readonly kind: 'listed';
      readonly round: RoundContext;
      readonly scope: 'instances';
      readonly project: string;
      readonly listed: readonly string[];
      readonly recorded: readonly string[];
    }
  | { readonly kind: 'networks-landed'; readonly round: RoundContext }
  | { readonly kind: 'listing-failed'; readonly round: RoundContext; readonly what: string; readonly error: unknown };

/** What one round knows about its progress. */
export class RoundContext {
  /** A newer round started: whatever this one still says is ignored. */
  abandoned = false;
  /** Projects the round goes on with: served, or whose read failed. */
  readonly served: string[] = [];
  /** Projects owning networks: `default` always, and served projects with `features.networks`. */
  readonly owners = new Set<string>(['default']);
  private projectsExpected = 0;
  private projectsLanded = 0;
  private networksExpected = 0;
  private networksLandedCount = 0;
  private networksListed = false;
  private readonly projectsDone = new Subject<never>();
  private readonly networksDone = new Subject<never>();

  constructor(readonly number: number) {}

  /** The project listing answered with `count` names. */
  expectProjects(count: number): void {
    this.projectsExpected = count;
  }

  /** One of the round's project reads ended. */
  projectLanded(name: string, outcome: ProjectOutcome): void {
    if (outcome.status === 'served' || outcome.status === 'failed') {
      this.served.push(name);
      if (name !== 'default' && isTrue(outcome.config?.['features.networks'] ?? undefined)) this.owners.add(name);
    }
    if (++this.projectsLanded === this.projectsExpected) this.projectsDone.complete();
  }

  /** Completes once every project the listing named has landed. */
  allProjectsLanded(): Observable<never> {
    return defer(() => (this.projectsLanded >= this.projectsExpected ? EMPTY : this.projectsDone));
  }

  /** An owner's network listing answered with `count` names. */
  expectNetworks(count: number): void {
    this.networksExpected += count;
  }

  /** Every owner's network listing has answered (or failed). */
  networkListingsDone(): void {
    this.networksListed = true;
    if (this.networksLandedCount >= this.networksExpected) this.networksDone.complete();
  }

  /** One of the round's network reads ended. */
  networkLanded(): void {
    this.networksLandedCount++;
    if (this.networksListed && this.networksLandedCount >= this.networksExpected) this.networksDone.complete();
  }

  /** Completes once every network the listings named has landed. */
  allNetworksLanded(): Observable<never> {
    return defer(() => (this.networksListed && this.networksLandedCount >= this.networksExpected ? EMPTY : this.networksDone));
  }
}

/**
 * The round as an Observable of names, for `pacedSweep`'s `list`: it lists projects (a failure
 * fails the round), hands each project on and waits for their reads; lists each owner's networks
 * (a failure skips that owner), hands them on and waits; then lists each served project's
 * instances (a failure skips that project) and hands them on. Completes after the last listing.
 *
 * The keys a listing is checked against are recorded when it goes out, not when it answers
 * (E5), so a name created while the listing was in flight is not pruned.
 */
export function roundScript(
  round: RoundContext,
  view: RoundView,
  tell: (signal: RoundSignal) => void,
  reader: ObservableIncusReader,
): Observable<RoundItem> {
  const projects$ = defer(() => {
    const recorded = view.projectNames();
    return reader.projectNames$().pipe(
      mergeMap((names) => {
        round.expectProjects(names.length);
        tell({ kind: 'listed', round, scope: 'projects', listed: names, recorded });
        return from(names.map((name): RoundItem => ({ kind: 'project', name })));
      }),
    );
  });

  const networksOf = (owner: string): Observable<RoundItem> =>
    defer(() => {
      const recorded = view.networkNames(owner);
      return reader.networkNames$(owner).pipe(
        mergeMap((names) => {
          round.expectNetworks(names.length);
          tell({ kind: 'listed', round, scope: 'networks', owner, listed: names, recorded });
          return from(names.map((name): RoundItem => ({ kind: 'network', owner, name })));
        }),
        catchError((error: unknown) => {
          tell({ kind: 'listing-failed', round, what: `networks of ${owner}`, error });
          return EMPTY;
        }),
      );
    });

  const instancesOf = (project: string): Observable<RoundItem> =>
    defer(() => {
      const recorded = view.instanceNames(project);
      return reader.instanceNames$(project).pipe(
        mergeMap((names) => {
          tell({ kind: 'listed', round, scope: 'instances', project, listed: names, recorded });
          return from(names.map((name): RoundItem => ({ kind: 'instance', project, name })));
        }),
        catchError((error: unknown) => {
          tell({ kind: 'listing-failed', round, what: `instances of ${project}`, error });
          return EMPTY;
        }),
      );
    });

  return concat(
    projects$,
    round.allProjectsLanded(),
    defer(() => from([...round.owners])).pipe(concatMap(networksOf)),
    defer(() => {
      round.networkListingsDone();
      return round.allNetworksLanded();
    }),
    defer(() => {
      tell({ kind: 'networks-landed', round });
      return EMPTY;
    }),
    defer(() => from([...round.served])).pipe(concatMap(instancesOf)),
  );
}
