import { ChoriaClientConfig } from './clientConfig';

/** The SRV records go-choria asks for brokers, in order (`framework.go` `MiddlewareServers`). */
export const MIDDLEWARE_SRV_RECORDS = ['_mcollective-server._tcp', '_x-puppet-mcollective._tcp'] as const;

/** Where go-choria connects when nothing is listed and SRV finds nothing (or is off). */
export const DEFAULT_BROKERS = ['nats://puppet:4222'];

/**
 * Where the brokers come from: a list (the provisioner's `rxfleet.nats_servers`, else the Choria
 * config's `plugin.choria.middleware_hosts`), DNS SRV records in `domain` (the host's domain when
 * undefined) falling back to {@link DEFAULT_BROKERS}, or that default alone (`use_srv` off).
 */
export type BrokerSource =
  { kind: 'listed'; servers: string[] } | { kind: 'srv'; domain: string | undefined } | { kind: 'default'; servers: string[] };

/** One SRV answer, as DNS gives it. */
export interface SrvAnswer {
  name: string;
  port: number;
  priority: number;
  weight: number;
}

/** go-choria's order of precedence for the brokers; `overrides` are rxfleet's `nats_servers`. */
export function brokerSource(
  choria: Pick<ChoriaClientConfig, 'middlewareHosts' | 'useSrv' | 'srvDomain'>,
  overrides: string[] = [],
): BrokerSource {
  if (overrides.length > 0) return { kind: 'listed', servers: overrides };
  if (choria.middlewareHosts.length > 0) return { kind: 'listed', servers: choria.middlewareHosts };
  if (choria.useSrv) return { kind: 'srv', domain: choria.srvDomain };
  return { kind: 'default', servers: DEFAULT_BROKERS };
}

/** The domain of a fully qualified name (what follows its first dot), or `undefined` for a bare name. */
export function domainOf(fqdn: string): string | undefined {
  const dot = fqdn.replace(/\.$/, '').indexOf('.');
  return dot <= 0 ? undefined : fqdn.replace(/\.$/, '').slice(dot + 1);
}

/**
 * SRV answers as NATS URLs, lowest priority first and, within a priority, the heaviest weight
 * first (RFC 2782 picks by weighted chance; a fixed order keeps a reconnect's choice predictable).
 * The target's trailing dot is dropped, as go-choria's `srvcache` does.
 */
export function srvServers(answers: SrvAnswer[]): string[] {
  return [...answers]
    .sort((a, b) => a.priority - b.priority || b.weight - a.weight)
    .map((a) => `nats://${a.name.replace(/\.$/, '')}:${a.port}`);
}
