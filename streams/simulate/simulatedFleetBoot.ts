import { SimulatedNode } from '../../lib/simulate/simulatedNode';

/**
 * Boots a fleet's nodes in index order, from the moment it is made: all at once when `bootRate` is
 * 0 or less, otherwise `bootRate` nodes a second on average, in ten batches a second (the first
 * batch at once). {@link allBooted} resolves when the last node has booted; {@link stop} boots no
 * more.
 */
export class FleetBootSchedule {
  /** Resolves once every node has booted. */
  readonly allBooted: Promise<void>;
  private next = 0;
  private resolveBooted!: () => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly nodes: readonly SimulatedNode[],
    bootRate: number,
    private readonly boot: (node: SimulatedNode) => void,
  ) {
    this.allBooted = new Promise<void>((resolve) => (this.resolveBooted = resolve));
    if (bootRate <= 0) this.bootNext(nodes.length);
    else {
      // Ten batches a second; the fractional remainder carries over, so any rate is honoured on average.
      let owed = 0;
      const tick = (): void => {
        owed += bootRate / 10;
        const whole = Math.floor(owed);
        owed -= whole;
        this.bootNext(whole);
        if (this.next === nodes.length && this.timer !== undefined) clearInterval(this.timer);
      };
      this.timer = setInterval(tick, 100);
      tick();
    }
  }

  /** How many nodes have booted so far. */
  get booted(): number {
    return this.next;
  }

  /** Boots no more nodes. */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  private bootNext(count: number): void {
    for (let n = 0; n < count && this.next < this.nodes.length; n++) this.boot(this.nodes[this.next++]);
    if (this.next === this.nodes.length) this.resolveBooted();
  }
}
