import { NatsConnection } from '@nats-io/transport-node';
import { Observable, Subject, SchedulerLike, share, tap } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { singleReplicaWarning } from '../../lib/bucketLayout';
import { ElectionMetrics } from '../../lib/choria/electionMetrics';
import { errorMessage } from '../../lib/choria/errors';
import { ElectionStore } from '../../lib/election/ElectionStore';
import { ElectionEvent, campaign } from '../../lib/election/campaign';
import { Leadership, leadershipGate } from '../../lib/election/leadershipGate';
import { Logger } from '../../lib/logger';
import { natsElectionStore } from '../../streams/election/natsElectionStore';
import { DaemonTuning, ELECTION_KEY } from './daemonTypes';

/** What {@link startElection} needs. */
export interface ElectionParts {
  identity: string;
  nc: NatsConnection;
  /** The bucket; default the Choria Streams one over `nc`, under `apiPrefix`. */
  store?: ElectionStore | undefined;
  apiPrefix?: string | undefined;
  maxCandidateIntervalMs?: number | undefined;
  gate: PauseGate;
  metrics: ElectionMetrics;
  logger: Logger;
  scheduler: SchedulerLike;
  tuning: DaemonTuning;
}

/** The election, running. */
export interface Election extends Leadership {
  /** Every `won` and `lost` as it happens. Completes on `stop`. */
  readonly events$: Observable<ElectionEvent>;
  /** Whether set-up is done (the bucket's TTL read): a standing-by instance is ready. */
  ready(): boolean;
}

/**
 * `leader_election`: campaigns for {@link ELECTION_KEY} as upstream's provisioners do, with the
 * election metrics and every set-up failure logged and retried (P8), and drives the pause gate
 * through {@link leadershipGate}. A bucket with one replica on a cluster is warned about once.
 */
export function startElection(parts: ElectionParts): Election {
  const { identity, gate, metrics, logger, scheduler, tuning } = parts;
  let setUp = false;
  let warned = false;
  const store =
    parts.store ??
    natsElectionStore({
      nc: parts.nc,
      apiPrefix: parts.apiPrefix,
      onLayout: (layout) => {
        const warning = warned ? undefined : singleReplicaWarning(layout);
        if (warning !== undefined) logger.warn({ bucket: layout.bucket, replicas: layout.replicas, cluster: layout.cluster }, warning);
        warned ||= warning !== undefined;
      },
    });
  const events = new Subject<ElectionEvent>();
  logger.info({ election: ELECTION_KEY }, `Starting leader election against '${ELECTION_KEY}'`);
  const election$ = campaign({
    identity,
    store,
    scheduler,
    logger,
    maxCandidateIntervalMs: parts.maxCandidateIntervalMs,
    startSplayMs: tuning.electionStartSplayMs,
    announceDelayMs: tuning.electionAnnounceDelayMs,
    setupRetryMs: tuning.electionSetupRetryMs,
    random: tuning.random,
    hooks: {
      onCampaign: (state) => metrics.campaign(state),
      onLeader: (leads) => metrics.setLeader(leads),
      onInterval: (ms) => metrics.setIntervalSeconds(ms / 1000),
      onSetupFailure: (error, attempt) => {
        metrics.setupFailure();
        logger.error({ err: error, attempt }, `leader election set-up failed (attempt ${attempt}): ${errorMessage(error)}; retrying`);
      },
      onSetup: (ttlMs) => {
        setUp = true;
        logger.info({ ttlMs }, 'leader election set up: campaigning');
      },
    },
  }).pipe(
    tap((event) => events.next(event)),
    share(),
  );
  const leadership = leadershipGate(election$, gate, (leads) =>
    logger.warn(leads ? 'Became leader after winning election' : 'Lost leadership'),
  );
  return {
    ...leadership,
    events$: events.asObservable(),
    ready: () => setUp,
    stop: () => {
      leadership.stop();
      events.complete();
    },
  };
}
