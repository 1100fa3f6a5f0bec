/**
 * The Incus/LXD client: where the server is ({@link incusEndpoint}), its REST API as the
 * enricher's `IncusReader` ({@link IncusRestClient}), and its lifecycle events as a stream
 * ({@link incusEvents}). Shapes and the reader interface are in `lib/incus/api.ts`.
 */
export { IncusEndpointError, IncusPinError, certificateFingerprint, defaultIncusSocket, incusEndpoint } from './incusEndpoint';
export type { IncusEndpoint, IncusEndpointOptions } from './incusEndpoint';
export { IncusRestClient } from './incusRestClient';
export type { IncusRestClientOptions } from './incusRestClient';
export { eventsPath, incusEvents } from './incusEvents';
export type { IncusEventsOptions } from './incusEvents';
export { wsEventSocket } from './eventSocket';
export type { EventSocket, EventSocketHandlers, EventSocketOpener, WsEventSocketOptions } from './eventSocket';
