import { Resolver } from 'node:dns/promises';
import { BrokerSource, DEFAULT_BROKERS, MIDDLEWARE_SRV_RECORDS, domainOf, srvServers } from '../../lib/choria/brokerSource';
import { Logger, silentLogger } from '../../lib/logger';
import { hostFqdn } from './clientConfigFile';
import { facterDomain } from './facter';

/** Options for {@link resolveBrokers}. */
export interface ResolveBrokersOptions {
  /** DNS servers to ask (`ip` or `ip:port`); default the system's (`/etc/resolv.conf`). */
  dnsServers?: string[];
  /** The host's fully qualified name, whose domain is searched when no SRV domain is set. Default {@link hostFqdn}. */
  fqdn?: () => Promise<string>;
  /** The domain facter reports (`networking.domain`), as go-choria asks it; default runs facter when installed. */
  facterDomain?: () => Promise<string | undefined>;
  /** Per query. Default 2 s, two tries. */
  timeoutMs?: number;
  logger?: Logger;
}

/** The brokers to connect to, and how they were found (for the log). */
export interface ResolvedBrokers {
  servers: string[];
  /** `listed`, `srv` (found in DNS) or `default` (`puppet:4222`). */
  from: BrokerSource['kind'];
  /** The SRV record that answered, or why none did. */
  detail?: string;
}

/**
 * The brokers to connect to, as go-choria's `MiddlewareServers` finds them: a listed set as it is;
 * otherwise, with SRV lookups on, the first of `_mcollective-server._tcp.<domain>` and
 * `_x-puppet-mcollective._tcp.<domain>` that has records (`domain` is `plugin.choria.srv_domain`,
 * else facter's `networking.domain` when facter is installed, else the domain of the host's name); when neither has any, or the domain is unknown, or SRV is off, `puppet:4222`.
 * A failed lookup is logged at warn, as upstream, and never rejects.
 */
export async function resolveBrokers(source: BrokerSource, options: ResolveBrokersOptions = {}): Promise<ResolvedBrokers> {
  const logger = options.logger ?? silentLogger;
  if (source.kind !== 'srv') return { servers: source.servers, from: source.kind };
  // go-choria asks facter only; without facter rxfleet takes the domain of the host's name instead.
  const domain = source.domain ?? (await (options.facterDomain ?? facterDomain)()) ?? domainOf(await (options.fqdn ?? hostFqdn)());
  if (domain === undefined) {
    const detail = 'the host has no domain to look SRV records up in (set plugin.choria.srv_domain)';
    logger.warn(`Could not resolve Middleware Server SRV records: ${detail}; using ${DEFAULT_BROKERS.join(', ')}`);
    return { servers: DEFAULT_BROKERS, from: 'default', detail };
  }
  const resolver = new Resolver({ timeout: options.timeoutMs ?? 2000, tries: 2 });
  if (options.dnsServers !== undefined && options.dnsServers.length > 0) resolver.setServers(options.dnsServers);
  const failures: string[] = [];
  for (const record of MIDDLEWARE_SRV_RECORDS) {
    const name = `${record}.${domain}`;
    try {
      const servers = srvServers(await resolver.resolveSrv(name));
      if (servers.length > 0) {
        logger.info({ record: name, servers }, `Found ${servers.length} middleware servers from SRV record ${name}`);
        return { servers, from: 'srv', detail: name };
      }
      failures.push(`${name}: no records`);
    } catch (error) {
      failures.push(`${name}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  const detail = failures.join('; ');
  logger.warn(`Could not resolve Middleware Server SRV records (${detail}); using ${DEFAULT_BROKERS.join(', ')}`);
  return { servers: DEFAULT_BROKERS, from: 'default', detail };
}
