import {
  Observable,
  SchedulerLike,
  asyncScheduler,
  filter,
  from,
  interval,
  lastValueFrom,
  map,
  merge,
  mergeMap,
  takeWhile,
  tap,
  timer,
} from 'rxjs';
import { AdmissionLedger, PauseGate, Ticket, admit, collectUntilIdle, done, failed, pauseWhen, workerPool } from '../operators';

/** Options for {@link runOperatorTour}. */
export interface TourOptions {
  nodes: number;
  workers: number;
  out: NodeJS.WritableStream;
  scheduler?: SchedulerLike;
  random?: () => number;
}

/** What the tour did. */
export interface TourSummary {
  nodes: number;
  provisioned: number;
  failures: number;
  refusedHeld: number;
  refusedFull: number;
  droppedWhilePaused: number;
  elapsedMs: number;
  nodesPerSecond: number;
}

type Sighting = { id: string; via: 'event' | 'discovery' };

const BOOT_SPAN_MS = 2000;
const DISCOVERY_EVERY_MS = 1000;
const BLIP_AT_MS = 700;
const BLIP_FOR_MS = 300;

/**
 * The operator kit end to end on a simulated fleet, in one process, until the provisioner lands:
 * nodes boot and announce themselves (events), discovery rounds gather replies until the fleet goes
 * quiet (`collectUntilIdle`), both sources meet at admission (`admit`), a leadership blip pauses
 * the pipeline and resets the ledger (`pauseWhen`, `PauseGate`), and a bounded worker pool
 * (`workerPool`) "provisions" each node with simulated latency and failures, holding a node's key
 * for a while after success as the real provisioner does while a node restarts.
 *
 * Resolves when every node is provisioned (or after 60 s), with a summary it also prints.
 */
export async function runOperatorTour(options: TourOptions): Promise<TourSummary> {
  const { nodes, workers, out, scheduler = asyncScheduler, random = Math.random } = options;
  const ids = Array.from({ length: nodes }, (_, i) => `node-${String(i).padStart(5, '0')}.demo`);
  const booted = new Set<string>();
  const provisioned = new Set<string>();
  const counts = { failures: 0, refusedHeld: 0, refusedFull: 0, droppedWhilePaused: 0 };
  const started = scheduler.now();

  const gate = new PauseGate();
  const ledger = new AdmissionLedger<Sighting, string>({ key: (s) => s.id, window: DISCOVERY_EVERY_MS, capacity: 50_000, scheduler });

  const events$: Observable<Sighting> = merge(
    ...ids.map((id) =>
      timer(random() * BOOT_SPAN_MS, scheduler).pipe(
        tap(() => booted.add(id)),
        map((): Sighting => ({ id, via: 'event' })),
      ),
    ),
  );

  // A discovery round: every booted, unprovisioned node answers within ~50 ms; the round ends
  // 30 ms after the last answer.
  const discovery$: Observable<Sighting> = interval(DISCOVERY_EVERY_MS, scheduler).pipe(
    filter(() => !gate.paused),
    mergeMap(() =>
      merge(...[...booted].filter((id) => !provisioned.has(id)).map((id) => timer(random() * 50, scheduler).pipe(map(() => id)))).pipe(
        collectUntilIdle({ idle: 30, timeout: 500, scheduler }),
      ),
    ),
    mergeMap((found) => from(found.map((id): Sighting => ({ id, via: 'discovery' })))),
  );

  const blip = scheduler.schedule(() => {
    gate.pause();
    blip.add(scheduler.schedule(() => gate.resume(), BLIP_FOR_MS));
  }, BLIP_AT_MS);

  const provision = (ticket: Ticket<Sighting, string>) =>
    timer(5 + random() * 30, scheduler).pipe(
      map(() => (random() < 0.05 ? failed(new Error('simulated RPC timeout')) : done(ticket.key, { releaseAfter: DISCOVERY_EVERY_MS * 2 }))),
    );

  // A bar redrawn in place only makes sense on a terminal; a pipe gets the final line alone.
  const isTerminal = (out as { isTTY?: boolean }).isTTY === true;
  const progress = scheduler.schedule(function tick() {
    if (isTerminal) out.write(`\r${bar(provisioned.size, nodes)} ${provisioned.size}/${nodes} provisioned`);
    this.schedule(undefined, 250);
  }, 250);

  await lastValueFrom(
    merge(events$, discovery$).pipe(
      pauseWhen(gate.paused$, { onDrop: () => counts.droppedWhilePaused++ }),
      admit(ledger, {
        reset: gate.paused$.pipe(filter((paused) => paused)),
        onRefuse: (r) => (r.reason === 'held' ? counts.refusedHeld++ : counts.refusedFull++),
      }),
      workerPool({ concurrency: workers, work: provision, scheduler }),
      tap((result) => {
        if (result.outcome.status === 'done') provisioned.add(result.ticket.key);
        else if (result.outcome.status === 'failed') counts.failures++;
      }),
      takeWhile(() => provisioned.size < nodes && scheduler.now() - started < 60_000),
    ),
    { defaultValue: undefined },
  );
  progress.unsubscribe();
  blip.unsubscribe();

  const elapsedMs = scheduler.now() - started;
  const summary: TourSummary = {
    nodes,
    provisioned: provisioned.size,
    ...counts,
    elapsedMs,
    nodesPerSecond: Math.round((provisioned.size / Math.max(elapsedMs, 1)) * 1000),
  };
  out.write(`\r${bar(provisioned.size, nodes)} ${provisioned.size}/${nodes} provisioned\n`);
  out.write(
    [
      'rxfleet operator tour (in-process; the real provisioner demo lands with `rxfleet provision`)',
      `  nodes provisioned:     ${summary.provisioned} of ${nodes}`,
      `  simulated failures:    ${summary.failures} (retried by the next discovery round)`,
      `  refused while held:    ${summary.refusedHeld}`,
      `  refused, queue full:   ${summary.refusedFull}`,
      `  dropped while paused:  ${summary.droppedWhilePaused}`,
      `  time:                  ${(elapsedMs / 1000).toFixed(1)} s, ${summary.nodesPerSecond} nodes/s`,
      '',
    ].join('\n'),
  );
  return summary;
}

function bar(done: number, total: number, width = 30): string {
  const filled = Math.round((done / Math.max(total, 1)) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}
