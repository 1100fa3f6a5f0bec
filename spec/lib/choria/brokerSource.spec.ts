import { parseChoriaClientConfig } from '../../../lib/choria/clientConfig';
import { DEFAULT_BROKERS, brokerSource, domainOf, srvServers } from '../../../lib/choria/brokerSource';

const choria = (...lines: string[]) => parseChoriaClientConfig(lines.join('\n')).config;

describe('brokerSource (go-choria MiddlewareServers)', () => {
  it('rxfleet.nats_servers, then plugin.choria.middleware_hosts, then SRV (on by default), then puppet:4222', () => {
    expect(brokerSource(choria('plugin.choria.middleware_hosts = b1:4222'), ['x:1'])).toEqual({ kind: 'listed', servers: ['x:1'] });
    expect(brokerSource(choria('plugin.choria.middleware_hosts = b1:4222'))).toEqual({ kind: 'listed', servers: ['nats://b1:4222'] });
    expect(brokerSource(choria())).toEqual({ kind: 'srv', domain: undefined });
    expect(brokerSource(choria('plugin.choria.srv_domain = example.net'))).toEqual({ kind: 'srv', domain: 'example.net' });
    expect(brokerSource(choria('plugin.choria.use_srv = false'))).toEqual({ kind: 'default', servers: DEFAULT_BROKERS });
    expect(DEFAULT_BROKERS).toEqual(['nats://puppet:4222']);
  });

  it("the host's domain is what follows the first dot of its name", () => {
    expect(domainOf('prov1.dc1.example.net')).toBe('dc1.example.net');
    expect(domainOf('prov1.example.net.')).toBe('example.net');
    expect(domainOf('localhost')).toBeUndefined();
  });

  it("SRV answers in priority order, heaviest first within one, target's dot dropped", () => {
    expect(
      srvServers([
        { name: 'c.example.net.', port: 4222, priority: 20, weight: 5 },
        { name: 'a.example.net.', port: 4222, priority: 10, weight: 1 },
        { name: 'b.example.net', port: 4223, priority: 10, weight: 50 },
      ]),
    ).toEqual(['nats://b.example.net:4223', 'nats://a.example.net:4222', 'nats://c.example.net:4222']);
  });
});
