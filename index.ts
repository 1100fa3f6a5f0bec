/**
 * rxfleet's programmatic entry: the operator kit, re-exported as it is from `@rxfleet/operators`
 * (its main entry, every name documented where it is defined), so that code that imports the
 * operators from 'rxfleet' keeps working. New code should depend on `@rxfleet/operators` itself:
 * it installs with rxjs as its only peer, without the daemons' dependencies.
 *
 * And what a consumer of the enricher's durable outputs composes into its own pipeline:
 * `followFleet` (the state bucket read, then the stream followed, as an Observable of the fleet and
 * its changes) and `mergeFleet` (the merge alone, for sources of one's own).
 */
export * from '@rxfleet/operators';
export { followFleet } from './streams/jetstream/followFleet';
export type { FollowFleetOptions } from './streams/jetstream/followFleet';
export { mergeFleet } from './lib/enricher/follow/mergeFleet';
export { FleetLedger, fleetKey } from './lib/enricher/follow/fleetLedger';
export type { FleetInput, FleetInstance, FleetUpdate, GoneInstance } from './lib/enricher/follow/fleetLedger';
export type { EventPayload } from './lib/enricher/output/payload';
