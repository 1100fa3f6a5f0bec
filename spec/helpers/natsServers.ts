import { currentNatsServerBinary, CURRENT_NATS_SERVER_VERSION } from './goPeers';

/** A nats-server a spec runs against: its name in the spec's title and its executable. */
export interface NatsServerKind {
  name: string;
  binary: string;
}

/** Debian 12's nats-server (2.9.10): years older than what sites run, and what rxfleet's floor is. */
export const DEBIAN_NATS_SERVER: NatsServerKind = { name: 'Debian nats-server 2.9.10', binary: '/usr/sbin/nats-server' };

/** The current nats-server (the release line the Choria Broker embeds) the specs run by default. */
export const CURRENT_NATS_SERVER: NatsServerKind = {
  name: `nats-server ${CURRENT_NATS_SERVER_VERSION}`,
  get binary() {
    return currentNatsServerBinary();
  },
};

/**
 * Both servers, for the specs whose promises rest on what the server does with JetStream: the
 * claims, the election and the cluster (`describe.each(NATS_SERVERS)`). Every other spec runs on
 * the current server only (first on PATH, spec/helpers/runDirSetup.ts).
 */
export const NATS_SERVERS: NatsServerKind[] = [CURRENT_NATS_SERVER, DEBIAN_NATS_SERVER];
