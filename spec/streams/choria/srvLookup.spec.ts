import { resolveBrokers } from '../../../streams/choria/srvLookup';
import { SpecDnsServer, startDnsServer } from '../../helpers/dnsServer';
import { capturingLogger } from '../../helpers/provisioner';

describe('resolveBrokers against a DNS server the spec controls', () => {
  let dns: SpecDnsServer;
  beforeAll(async () => {
    dns = await startDnsServer();
  });
  afterAll(() => dns.close());
  beforeEach(() => {
    dns.records.clear();
    dns.asked.length = 0;
  });

  it('asks _mcollective-server._tcp in the SRV domain and connects where it says', async () => {
    dns.records.set('_mcollective-server._tcp.example.test', [
      { target: 'broker2.example.test.', port: 4223, priority: 20 },
      { target: 'broker1.example.test.', port: 4222, priority: 10 },
    ]);
    expect(await resolveBrokers({ kind: 'srv', domain: 'example.test' }, { dnsServers: [dns.address] })).toEqual({
      servers: ['nats://broker1.example.test:4222', 'nats://broker2.example.test:4223'],
      from: 'srv',
      detail: '_mcollective-server._tcp.example.test',
    });
    expect(dns.asked).toEqual(['_mcollective-server._tcp.example.test']);
  });

  it("then _x-puppet-mcollective._tcp, in the host's domain when no SRV domain is set", async () => {
    dns.records.set('_x-puppet-mcollective._tcp.dc1.example.test', [{ target: 'puppet-broker.dc1.example.test', port: 4222 }]);
    const resolved = await resolveBrokers(
      { kind: 'srv', domain: undefined },
      { dnsServers: [dns.address], fqdn: async () => 'prov1.dc1.example.test' },
    );
    expect(resolved.servers).toEqual(['nats://puppet-broker.dc1.example.test:4222']);
    expect(dns.asked).toEqual(['_mcollective-server._tcp.dc1.example.test', '_x-puppet-mcollective._tcp.dc1.example.test']);
  });

  it('falls back to puppet:4222 when neither has records, or the host has no domain, and says why', async () => {
    const { logger, messages } = capturingLogger();
    const none = await resolveBrokers({ kind: 'srv', domain: 'example.test' }, { dnsServers: [dns.address], logger });
    expect(none).toMatchObject({ servers: ['nats://puppet:4222'], from: 'default' });
    expect(none.detail).toBe('_mcollective-server._tcp.example.test: ENOTFOUND; _x-puppet-mcollective._tcp.example.test: ENOTFOUND');
    expect(messages()).toEqual([`Could not resolve Middleware Server SRV records (${none.detail}); using nats://puppet:4222`]);
    expect(await resolveBrokers({ kind: 'srv', domain: undefined }, { dnsServers: [dns.address], fqdn: async () => 'bare' })).toMatchObject(
      { servers: ['nats://puppet:4222'], from: 'default' },
    );
  });

  it('a listed set or the default is used as it is, without asking DNS', async () => {
    expect(await resolveBrokers({ kind: 'listed', servers: ['nats://b:1'] }, { dnsServers: [dns.address] })).toEqual({
      servers: ['nats://b:1'],
      from: 'listed',
    });
    expect(await resolveBrokers({ kind: 'default', servers: ['nats://puppet:4222'] })).toEqual({
      servers: ['nats://puppet:4222'],
      from: 'default',
    });
    expect(dns.asked).toEqual([]);
  });
});
