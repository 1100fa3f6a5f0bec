import { setMaxListeners } from 'node:events';
import { Observable, Subject } from 'rxjs';
import { PoolResult } from '@rxfleet/operators';
import { errorMessage } from '../../lib/choria/errors';
import { Logger } from '../../lib/logger';
import { ProvisionPipelineConfig, provisionPipeline } from '../../lib/provision/pipeline';
import { CycleOutcome, CycleResult } from '../../lib/provision/cycle/cycleResult';
import { HostTicket } from '../../lib/provision/sightings/sighting';

/** The pipeline's configuration, but for what {@link runPipeline} owns: the stop signal and the hard stop. */
export interface RunPipelineConfig extends Omit<ProvisionPipelineConfig, 'stop' | 'provision'> {
  /** One node's cycle; `hardStop` aborts it at once. */
  provision(ticket: HostTicket, hardStop: AbortSignal): Observable<CycleOutcome>;
  logger: Logger;
  /** Called once, later than the failure, if the pipeline errors (a bug): the daemon stops itself. */
  onFailure(): void;
}

/** The provisioning pipeline, subscribed. */
export interface RunningPipeline {
  /** Every finished cycle (and every skipped stale ticket). Completes when {@link close} is called. */
  readonly results$: Observable<PoolResult<HostTicket, CycleResult>>;
  /** Resolves once the pipeline has ended: after {@link stopSources}, when the last admitted cycle has. */
  readonly done: Promise<void>;
  /** Why the pipeline failed, when it did. */
  failure(): string | undefined;
  /** Stops discovery, events and admission; admitted cycles finish. */
  stopSources(): void;
  /** Aborts every cycle in flight. */
  abort(reason: Error): void;
  /** Unsubscribes and completes `results$`. */
  close(): void;
}

/**
 * Subscribes {@link provisionPipeline}. The pipeline turns every cycle and discovery failure into a
 * value, so an error reaching here is a bug: it is logged at fatal, `done` resolves, and
 * `onFailure` is called so that a daemon that no longer provisions does not stay ready.
 */
export function runPipeline(config: RunPipelineConfig): RunningPipeline {
  const { logger, onFailure, provision, ...pipeline } = config;
  const stop$ = new Subject<void>();
  const hardStop = new AbortController();
  // Every cycle in flight listens to it: as many listeners as workers, by design.
  setMaxListeners(0, hardStop.signal);
  const results = new Subject<PoolResult<HostTicket, CycleResult>>();
  let failure: string | undefined;
  let ended!: () => void;
  const done = new Promise<void>((resolve) => (ended = resolve));
  const subscription = provisionPipeline({ ...pipeline, provision: (ticket) => provision(ticket, hardStop.signal), stop: stop$ }).subscribe(
    {
      next: (result) => results.next(result),
      error: (error: unknown) => {
        failure = errorMessage(error);
        logger.fatal({ err: error }, `the provisioning pipeline failed: ${failure}`);
        ended();
        // Later, not here: the pipeline may fail while it is being subscribed, before its owner has it.
        queueMicrotask(onFailure);
      },
      complete: () => ended(),
    },
  );
  return {
    results$: results.asObservable(),
    done,
    failure: () => failure,
    stopSources: () => {
      stop$.next();
      stop$.complete();
    },
    abort: (reason) => {
      if (!hardStop.signal.aborted) hardStop.abort(reason);
    },
    close: () => {
      subscription.unsubscribe();
      results.complete();
    },
  };
}
