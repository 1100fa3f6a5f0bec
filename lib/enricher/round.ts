/**
 * One round over the fleet, by name: what to read, in which order, and what to prune.
 *
 * Names, never recursive listings: projects, then each network owner's networks, then each
 * served project's instances, a read per name. Two phases before the instances because the wire
 * map has to be whole before an instance is placed on it. The script only lists and hands names
 * on; the enricher reads each name (through the same pool and per-key reads as everything else)
 * and tells the round when they landed. `pacedSweep` paces the names and runs the rounds.
 */
import { EMPTY, Observable, Subject, catchError, concat, concatMap, defer, from, mergeMap } from 'rxjs';
import { ObservableIncusReader } from './observableReader';
import { isTrue } from './records';

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

/** What a round asks of the enricher that runs it (each call lands in the enricher's own inbox). */
export interface RoundHost {
  /** The model's keys now, recorded as a listing goes out (E5). */
  projectNames(): string[];
  networkNames(owner: string): string[];
  instanceNames(project: string): string[];
  /** A listing answered: prune what was recorded and is not listed. */
  projectsListed(round: RoundContext, listed: readonly string[], recorded: readonly string[]): void;
  networksListed(round: RoundContext, owner: string, listed: readonly string[], recorded: readonly string[]): void;
  instancesListed(round: RoundContext, project: string, listed: readonly string[], recorded: readonly string[]): void;
  /** Every network of the round has landed: the wire map is whole. */
  networksLanded(round: RoundContext): void;
  /** A network or instance listing failed: that scope is skipped and nothing in it is pruned. */
  listingFailed(round: RoundContext, what: string, error: unknown): void;
}

/** What one round knows about its progress. */
export class RoundContext {
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
export function roundScript(round: RoundContext, host: RoundHost, reader: ObservableIncusReader): Observable<RoundItem> {
  const projects$ = defer(() => {
    const recorded = host.projectNames();
    return reader.projectNames$().pipe(
      mergeMap((names) => {
        round.expectProjects(names.length);
        host.projectsListed(round, names, recorded);
        return from(names.map((name): RoundItem => ({ kind: 'project', name })));
      }),
    );
  });

  const networksOf = (owner: string): Observable<RoundItem> =>
    defer(() => {
      const recorded = host.networkNames(owner);
      return reader.networkNames$(owner).pipe(
        mergeMap((names) => {
          round.expectNetworks(names.length);
          host.networksListed(round, owner, names, recorded);
          return from(names.map((name): RoundItem => ({ kind: 'network', owner, name })));
        }),
        catchError((error: unknown) => {
          host.listingFailed(round, `networks of ${owner}`, error);
          return EMPTY;
        }),
      );
    });

  const instancesOf = (project: string): Observable<RoundItem> =>
    defer(() => {
      const recorded = host.instanceNames(project);
      return reader.instanceNames$(project).pipe(
        mergeMap((names) => {
          host.instancesListed(round, project, names, recorded);
          return from(names.map((name): RoundItem => ({ kind: 'instance', project, name })));
        }),
        catchError((error: unknown) => {
          host.listingFailed(round, `instances of ${project}`, error);
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
      host.networksLanded(round);
      return EMPTY;
    }),
    defer(() => from([...round.served])).pipe(concatMap(instancesOf)),
  );
}
