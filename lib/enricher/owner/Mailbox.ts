import { RingQueue } from '@rxfleet/operators';

/**
 * One owner's inbox: tasks posted from anywhere run one at a time, in the order they were
 * posted, never inside one another.
 *
 * The enricher's state has one owner, as the Go original's run loop has one goroutine. In a
 * single-threaded runtime the danger is not two threads but re-entrancy: a read that answers
 * synchronously, or a consumer that reacts to an emitted event by feeding another one in, would
 * otherwise run in the middle of the task that caused it and see the model half-patched. Here a
 * task posted while another runs waits its turn, so every task starts from a settled state.
 */
export class Mailbox {
  private readonly tasks = new RingQueue<() => void>();
  private running = false;
  private failed = false;

  /**
   * @param afterEach Runs after every task (the enricher updates its gauges there).
   * @param onError A task that throws is a bug, not bad input: the model may be half patched, so
   * nothing more runs. The error is handed here once (the owner errors its output with it, so the
   * daemon's pipeline errors and the daemon says so); the tasks behind it are dropped and later
   * posts are ignored.
   * @param onIdle Runs each time the last waiting task has run.
   */
  constructor(
    private readonly afterEach: () => void,
    private readonly onError: (error: unknown) => void,
    private readonly onIdle: () => void = () => undefined,
  ) {}

  /** Runs `task` now if nothing is running, else after everything posted before it. */
  post(task: () => void): void {
    if (this.failed) return;
    this.tasks.push(task);
    if (this.running) return;
    this.running = true;
    try {
      for (let next = this.tasks.shift(); next !== undefined; next = this.tasks.shift()) {
        next();
        this.afterEach();
      }
    } catch (error) {
      this.failed = true;
      this.tasks.clear();
      this.onError(error);
      return;
    } finally {
      this.running = false;
    }
    this.onIdle();
  }

  /** Tasks waiting. */
  get length(): number {
    return this.tasks.length;
  }
}
