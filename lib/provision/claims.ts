import {
  Observable,
  ObservableInput,
  SchedulerLike,
  Subscription,
  asyncScheduler,
  defer,
  from,
  map,
  retry,
  take,
  throwIfEmpty,
  timer,
} from 'rxjs';
import { failed } from '@rxfleet/operators';
import { errorMessage } from '../choria/errors';
import { formatGoDuration } from '../choria/duration';
import type { ClaimStage, CycleOutcome, CycleResult, HostTicket } from './pipeline';
import { CycleError } from './provisionCycle';

/**
 * What active-active provisioning needs of a JetStream KV bucket (DECISIONS P16), and nothing
 * more. The bucket's max age is a claim's lifetime: a claim not written again within it lapses.
 * Each operation is an Observable factory, so the claim stage runs in virtual time against a fake.
 */
export interface ClaimStore {
  /** The bucket's max age, ms (0: none, which a claims bucket must not have). */
  ttl(): ObservableInput<number>;
  /** Writes `value` if the key is free (never written, deleted, or aged out); emits the revision; errors {@link ClaimHeldError} if it is held. */
  create(key: string, value: string): ObservableInput<number>;
  /** Writes `value` if nobody wrote since `revision`; emits the new revision; errors {@link ClaimHeldError} otherwise. */
  update(key: string, value: string, revision: number): ObservableInput<number>;
  /** Deletes the key if nobody wrote since `revision`; a key somebody else holds now is left alone. */
  release(key: string, revision: number): ObservableInput<unknown>;
}

/** The key is held by someone else (JetStream's `wrong last sequence`). */
export class ClaimHeldError extends Error {
  override readonly name = 'ClaimHeldError';
  constructor(key: string, detail = 'held by another provisioner') {
    super(`${key}: ${detail}`);
  }
}

const KV_KEY = /^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$/;

/**
 * The KV key of a node's claim: its identity when that is a valid key (a host name is), otherwise
 * `=` and the identity in base64url, so any identity has exactly one key and none collide.
 */
export function claimKey(identity: string): string {
  if (KV_KEY.test(identity) && !identity.startsWith('=')) return identity;
  return `=${Buffer.from(identity, 'utf8').toString('base64url')}`;
}

/** Rotates a discovery round's identities to start at `offset`, so instances start on different nodes. */
export function rotateRound<T>(items: readonly T[], offset: number): T[] {
  if (items.length === 0) return [];
  const at = ((Math.floor(offset) % items.length) + items.length) % items.length;
  return [...items.slice(at), ...items.slice(0, at)];
}

/** What the claim stage reports, for metrics and logs. */
export interface ClaimHooks {
  won?(identity: string): void;
  /** Another instance holds the node: its cycle was not run. */
  lost?(identity: string): void;
  /** A claim held through a cycle was lost (taken, or not refreshed within its lifetime): the cycle was stopped. */
  lapsed?(identity: string, why: string): void;
  /** A store operation failed for another reason (the broker unreachable, no rights). */
  failed?(operation: 'create' | 'refresh' | 'release', identity: string, error: unknown): void;
  /** Claims held now. */
  held?(count: number): void;
}

/** Options for {@link NodeClaims}. */
export interface NodeClaimsOptions {
  store: ClaimStore;
  /** The claim's value: this instance's identity, so an administrator can see who holds what. */
  owner: string;
  /** The bucket's max age, ms (see {@link readClaimsTtl}). */
  ttlMs: number;
  /** How often a held claim is written again. Default a third of the TTL. */
  refreshMs?: number;
  scheduler?: SchedulerLike;
  hooks?: ClaimHooks;
}

/** Outcomes after which the node leaves provisioning mode: its claim is kept until it ages out. */
const LEAVING: ReadonlySet<CycleResult> = new Set<CycleResult>(['provisioned', 'shutdown']);

/**
 * The claim stage of active-active provisioning (DECISIONS P16): each node's cycle runs only under
 * a claim, a create-only write of the node's key in a KV bucket whose max age bounds the claim's
 * life, so exactly one instance provisions a node at a time.
 *
 * Guarantees, for {@link around}:
 * - A sighting older than the claims' lifetime is refused before claiming (as a stale sighting,
 *   step `stale`): a node another instance finished since then may already have lost its claim.
 * - A node held by another instance is not worked on: the outcome is `claimed`, nothing else runs.
 * - While the cycle runs its claim is written again every `refreshMs`, from the revision last
 *   written. When a write finds someone else's revision, or no write has succeeded within the TTL
 *   of the last one sent (the broker unreachable), the claim has lapsed: the cycle is stopped at
 *   once (unsubscribed, which aborts its RPCs and helper) and fails with step `claim`.
 * - When the cycle ends with the node leaving provisioning mode (`provisioned`, `shutdown`), the
 *   claim is written one last time and left to age out, so for one lifetime no other instance
 *   takes the node while it restarts; after any other ending, or an unsubscribe, it is deleted at
 *   once so another instance (or the next sighting) may take the node.
 * - A store failure never throws past the stage: a failed create fails the cycle (step `claim`),
 *   failed refreshes and releases are reported to the hooks.
 */
export class NodeClaims implements ClaimStage {
  private readonly scheduler: SchedulerLike;
  private readonly refreshMs: number;
  private readonly hooks: ClaimHooks;
  private heldCount = 0;

  constructor(private readonly options: NodeClaimsOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError(`a claim needs a lifetime: ttlMs must be > 0, got ${options.ttlMs}`);
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.refreshMs = options.refreshMs ?? Math.max(1, Math.floor(options.ttlMs / 3));
    this.hooks = options.hooks ?? {};
  }

  /** Claims run now. */
  get held(): number {
    return this.heldCount;
  }

  /** The ticket's cycle under a claim on its node. */
  around(ticket: HostTicket, cycle: () => Observable<CycleOutcome>): Observable<CycleOutcome> {
    const identity = ticket.key;
    const { store, owner, ttlMs } = this.options;
    const key = claimKey(identity);
    return new Observable<CycleOutcome>((subscriber) => {
      const age = this.scheduler.now() - ticket.admittedAt;
      if (age > ttlMs) {
        const why = `skipping node that's been waiting ${formatGoDuration(age)}: longer than a claim lives (${formatGoDuration(ttlMs)}), so another provisioner may have finished it`;
        subscriber.next(failed(new CycleError(identity, 'stale', why)));
        subscriber.complete();
        return undefined;
      }
      const work = new Subscription();
      let revision = 0;
      let holding = false;
      let lastSentAt = this.scheduler.now();
      let refreshing = false;

      const letGo = (release: boolean, keep = false): void => {
        if (!holding) return;
        holding = false;
        this.setHeld(-1);
        if (keep) this.fireAndForget('release', identity, () => store.update(key, owner, revision));
        else if (release) this.fireAndForget('release', identity, () => store.release(key, revision));
      };
      const lapse = (why: string): void => {
        letGo(false);
        work.unsubscribe();
        this.hooks.lapsed?.(identity, why);
        subscriber.next(failed(new CycleError(identity, 'claim', `the claim on ${identity} lapsed (${why}): its cycle was stopped`)));
        subscriber.complete();
      };
      let deadline: Subscription | undefined;
      const armDeadline = (): void => {
        deadline?.unsubscribe();
        const left = lastSentAt + ttlMs - this.scheduler.now();
        deadline = this.scheduler.schedule(
          () => lapse(`not written again within its ${formatGoDuration(ttlMs)} lifetime`),
          Math.max(0, left),
        );
        work.add(deadline);
      };
      const refresh = (): void => {
        if (refreshing || !holding) return;
        refreshing = true;
        const sentAt = this.scheduler.now();
        work.add(
          once(() => store.update(key, owner, revision)).subscribe({
            next: (next) => {
              refreshing = false;
              revision = next;
              lastSentAt = sentAt;
              armDeadline();
            },
            error: (error: unknown) => {
              refreshing = false;
              if (error instanceof ClaimHeldError) lapse('another provisioner wrote it');
              else this.hooks.failed?.('refresh', identity, error);
            },
          }),
        );
      };
      const start = (): void => {
        holding = true;
        this.setHeld(1);
        this.hooks.won?.(identity);
        armDeadline();
        work.add(timer(this.refreshMs, this.refreshMs, this.scheduler).subscribe(refresh));
        work.add(
          cycle().subscribe({
            next: (outcome) => {
              letGo(true, outcome.status === 'done' && LEAVING.has(outcome.value));
              work.unsubscribe();
              subscriber.next(outcome);
              subscriber.complete();
            },
            error: (error: unknown) => {
              letGo(true);
              work.unsubscribe();
              subscriber.error(error);
            },
            complete: () => {
              letGo(true);
              work.unsubscribe();
              subscriber.complete();
            },
          }),
        );
      };

      const sentAt = this.scheduler.now();
      work.add(
        once(() => store.create(key, owner)).subscribe({
          next: (created) => {
            revision = created;
            lastSentAt = sentAt;
            start();
          },
          error: (error: unknown) => {
            if (error instanceof ClaimHeldError) {
              this.hooks.lost?.(identity);
              subscriber.next({ status: 'done', value: 'claimed' });
            } else {
              this.hooks.failed?.('create', identity, error);
              subscriber.next(
                failed(new CycleError(identity, 'claim', `could not claim ${identity}: ${errorMessage(error)}`, { cause: error })),
              );
            }
            subscriber.complete();
          },
        }),
      );
      return () => {
        // Unsubscribed before the cycle ended (a hard stop, the pool torn down): free the node at once.
        letGo(true);
        work.unsubscribe();
      };
    });
  }

  private setHeld(change: number): void {
    this.heldCount += change;
    this.hooks.held?.(this.heldCount);
  }

  /** A write whose outcome nobody waits for (a release): its failure is only reported. */
  private fireAndForget(operation: 'release', identity: string, write: () => ObservableInput<unknown>): void {
    once(write).subscribe({ error: (error: unknown) => this.hooks.failed?.(operation, identity, error) });
  }
}

/** The first value of a store operation; completing without one is an error. */
function once<T>(operation: () => ObservableInput<T>): Observable<T> {
  return defer(() => from(operation())).pipe(
    take(1),
    throwIfEmpty(() => new Error('the claims bucket answered nothing')),
  );
}

/** Options for {@link readClaimsTtl}. */
export interface ReadClaimsTtlOptions {
  /** The pause before the `attempt`-th retry. Default 1 s doubling to 30 s. */
  retryMs?: (attempt: number) => number;
  onFailure?: (error: unknown, attempt: number) => void;
  scheduler?: SchedulerLike;
}

/**
 * The claims bucket's max age, read with retries until it can be (DECISIONS P8's rule, for the
 * claims): a bucket that cannot be read (not there, no rights, no JetStream) or has no max age (a
 * dead instance's claims would never lapse) is reported to `onFailure` and tried again.
 */
export function readClaimsTtl(store: ClaimStore, options: ReadClaimsTtlOptions = {}): Observable<number> {
  const { retryMs = (n: number) => Math.min(30_000, 1000 * 2 ** (n - 1)), onFailure, scheduler = asyncScheduler } = options;
  return once(() => store.ttl()).pipe(
    map((ttl) => {
      if (!(ttl > 0))
        throw new Error("the claims bucket has no max age: a dead instance's claims would never lapse; give it one (its TTL)");
      return ttl;
    }),
    retry({
      delay: (error: unknown, attempt: number) => {
        onFailure?.(error, attempt);
        return timer(retryMs(attempt), scheduler);
      },
    }),
  );
}
