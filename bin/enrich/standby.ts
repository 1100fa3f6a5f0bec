/**
 * `standby`: one of a pair of enrichers on the same Incus server. Both campaign for one key of
 * their own election bucket, with the election the provisioner runs (`lib/election/campaign.ts`,
 * the Choria Streams election); the leader enriches, the other follows the state bucket, so that
 * when it wins it starts from what consumers were last told rather than cold.
 */
import { Registry } from 'prom-client';
import { Subscription } from 'rxjs';
import { jetstreamManager } from '@nats-io/jetstream';
import { ElectionMetrics } from '../../lib/choria/electionMetrics';
import { errorMessage } from '../../lib/choria/errors';
import { campaign } from '../../lib/election/campaign';
import { StandbySettings } from '../../lib/enricher/config/config';
import { Logger } from '../../lib/logger';
import { createElectionBucket } from '../../streams/election/electionBucket';
import { natsElectionStore } from '../../streams/election/natsElectionStore';
import { FleetConnection } from '../../streams/natsConnection';
import { BucketView, StateSnapshot, bucketReading } from '../../streams/jetstream/stateBucket';
import { streamMessages } from '../../streams/jetstream/streamReading';

/** What {@link startStandby} needs. */
export interface StandbyParts {
  settings: StandbySettings;
  identity: string;
  connection: FleetConnection;
  /** The state bucket the standby follows. */
  stateBucket: string;
  registry: Registry;
  logger: Logger;
  /** Won: start enriching, from `snapshot` (the bucket as followed; undefined when not caught up yet). */
  onWon(snapshot: StateSnapshot | undefined): void;
  /** Lost (a refresh failed): stop publishing at once. */
  onLost(): void;
}

/** The standby, running. */
export interface Standby {
  /** The election is set up (its bucket's TTL read): standing by is ready. */
  ready(): boolean;
  leads(): boolean;
  /** Instances the follower holds (deleted ones too), while standing by. */
  following(): number;
  /** Stops campaigning (the key expires after the bucket TTL) and following. */
  stop(): void;
}

/** The state bucket, followed: every key's latest value, and whether the first pass is done. */
class Follower {
  readonly view: BucketView;
  private caughtUp = false;
  private readonly subscription = new Subscription();

  constructor(connection: FleetConnection, bucket: string, logger: Logger) {
    this.view = new BucketView(bucket);
    const { stream, options } = bucketReading(bucket);
    void jetstreamManager(connection.nc)
      .then((jsm) => jsm.streams.info(stream))
      .then((info) => (this.caughtUp ||= info.state.messages === 0))
      .catch(() => undefined);
    this.subscription.add(
      streamMessages(connection.nc, stream, options).subscribe({
        next: (m) => {
          this.view.take(m);
          if (m.info.pending === 0) this.caughtUp = true;
        },
        error: (error: unknown) => logger.warn({ err: error }, `following the state bucket failed: ${errorMessage(error)}`),
      }),
    );
  }

  snapshot(): StateSnapshot | undefined {
    return this.caughtUp ? this.view.snapshot() : undefined;
  }

  stop(): void {
    this.subscription.unsubscribe();
  }
}

/**
 * Campaigns and follows. `onWon` and `onLost` are called as leadership changes (never twice in a
 * row the same); set-up failures are logged, counted (`choria_election_setup_failures_total`) and
 * retried, never fatal. With `settings.create`, the election bucket is made first if missing.
 */
export async function startStandby(parts: StandbyParts): Promise<Standby> {
  const { settings, identity, connection, logger, registry } = parts;
  if (settings.create) {
    await createElectionBucket(connection.nc, { bucket: settings.bucket, ttlMs: settings.ttl, replicas: settings.replicas }).catch(
      (error: unknown) =>
        logger.warn(
          { err: error, bucket: settings.bucket },
          `the election bucket ${settings.bucket} was not created: ${errorMessage(error)}`,
        ),
    );
  }
  const metrics = new ElectionMetrics({ registry, election: settings.key, identity });
  let setUp = false;
  let leads = false;
  let follower: Follower | undefined = new Follower(connection, parts.stateBucket, logger);
  logger.info({ bucket: settings.bucket, key: settings.key, identity }, `standing by: campaigning for ${settings.bucket}/${settings.key}`);
  const subscription = campaign({
    identity,
    store: natsElectionStore({ nc: connection.nc, bucket: settings.bucket, key: settings.key }),
    logger,
    hooks: {
      onCampaign: (state) => metrics.campaign(state),
      onLeader: (leader) => metrics.setLeader(leader),
      onInterval: (ms) => metrics.setIntervalSeconds(ms / 1000),
      onSetupFailure: (error, attempt) => {
        metrics.setupFailure();
        logger.error(
          { err: error, attempt },
          `the enricher's election set-up failed (attempt ${attempt}): ${errorMessage(error)}; retrying`,
        );
      },
      onSetup: () => (setUp = true),
    },
  }).subscribe((event) => {
    const won = event === 'won';
    if (won === leads) return;
    leads = won;
    if (won) {
      const snapshot = follower?.snapshot();
      follower?.stop();
      follower = undefined;
      logger.warn({ identity, warm: snapshot !== undefined }, 'won the election: taking over');
      parts.onWon(snapshot);
    } else {
      logger.warn({ identity }, 'lost the election: standing by');
      parts.onLost();
      follower = new Follower(connection, parts.stateBucket, logger);
    }
  });
  return {
    ready: () => setUp,
    leads: () => leads,
    following: () => follower?.view.size ?? 0,
    stop: () => {
      subscription.unsubscribe();
      follower?.stop();
      follower = undefined;
    },
  };
}
