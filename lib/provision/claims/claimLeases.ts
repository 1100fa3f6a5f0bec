import { Observable, SchedulerLike } from 'rxjs';

/** A held claim, as the attempt boundary sees it. */
interface Lease {
  /** When the last write a quorum acknowledged was sent (the claim lives a TTL from then, at least). */
  lastSentAt: number;
  /** False from a failed write until a later one is acknowledged. */
  confirmed: boolean;
  /** Attempts waiting for the claim to be confirmed. */
  waiting: Array<() => void>;
}

/**
 * The claims an instance holds now, by node, as its cycles' RPC attempts see them (DECISIONS P20):
 * an attempt starts only while its node's claim is confirmed and has most of its life ahead of
 * it. Each claim's driver keeps its lease here; {@link ready} reads it.
 */
export class ClaimLeases {
  private readonly leases = new Map<string, Lease>();
  private count = 0;

  /**
   * @param freshForMs How long after its last acknowledged write was sent a claim still lets
   * attempts start: the TTL less one refresh period.
   * @param onHeld Called with the number held after each change.
   */
  constructor(
    private readonly scheduler: SchedulerLike,
    private readonly freshForMs: number,
    private readonly onHeld: (count: number) => void,
  ) {}

  /** Claims held now. */
  get held(): number {
    return this.count;
  }

  /** `identity`'s claim was won by a write sent at `sentAt`. */
  hold(identity: string, sentAt: number): void {
    this.leases.set(identity, { lastSentAt: sentAt, confirmed: true, waiting: [] });
    this.onHeld(++this.count);
  }

  /** A write sent at `sentAt` was acknowledged: the attempts waiting go. */
  confirm(identity: string, sentAt: number): void {
    const lease = this.leases.get(identity);
    if (lease === undefined) return;
    lease.lastSentAt = sentAt;
    lease.confirmed = true;
    for (const go of lease.waiting.splice(0)) go();
  }

  /** A write failed: attempts wait until one is acknowledged. */
  unconfirm(identity: string): void {
    const lease = this.leases.get(identity);
    if (lease !== undefined) lease.confirmed = false;
  }

  /** The claim was let go (released, left to age out, or lapsed). */
  letGo(identity: string): void {
    this.leases.delete(identity);
    this.onHeld(--this.count);
  }

  /**
   * The attempt boundary (P5's pause semantics, for the bucket): emits once, at once when the claim
   * on `identity` is confirmed and fresh (or there is none), otherwise as soon as a write is
   * acknowledged again. Unsubscribing stops the wait; a claim that lapses meanwhile stops the cycle.
   */
  ready(identity: string): Observable<void> {
    return new Observable<void>((subscriber) => {
      const lease = this.leases.get(identity);
      const go = (): void => {
        subscriber.next();
        subscriber.complete();
      };
      if (lease === undefined || this.fresh(lease)) return go();
      lease.waiting.push(go);
      return () => {
        const at = lease.waiting.indexOf(go);
        if (at >= 0) lease.waiting.splice(at, 1);
      };
    });
  }

  private fresh(lease: Lease): boolean {
    return lease.confirmed && this.scheduler.now() - lease.lastSentAt <= this.freshForMs;
  }
}
