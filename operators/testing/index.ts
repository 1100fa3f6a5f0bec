/**
 * `@rxfleet/operators/testing`: helpers for specs of pipelines built on the kit, as `rxjs/testing`
 * is for rxjs. Not part of the main entry, so nothing here ships in the code your users run.
 *
 * @packageDocumentation
 */
export { trackingScheduler } from './trackingScheduler.js';
export { TestTicket } from './TestTicket.js';

export type { TrackingScheduler } from './trackingScheduler.js';
export type { TestTicketEvent, TestTicketOptions } from './TestTicket.js';
