/**
 * `@rxfleet/operators/testing`: helpers for specs of pipelines built on the kit, as `rxjs/testing`
 * is for rxjs. Not part of the main entry, so nothing here ships in the code your users run.
 *
 * @packageDocumentation
 */
export { trackingScheduler } from './trackingScheduler';
export { TestTicket } from './TestTicket';

export type { TrackingScheduler } from './trackingScheduler';
export type { TestTicketEvent, TestTicketOptions } from './TestTicket';
