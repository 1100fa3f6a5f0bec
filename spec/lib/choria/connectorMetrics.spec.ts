import { Registry } from 'prom-client';
import { ProtocolError } from '../../../lib/choria/errors';
import { ConnectorMetrics, ProtocolMetrics, protocolOutcome } from '../../../lib/choria/connectorMetrics';
import { CONNECTOR_NAMED_COUNTERS, promtool } from '../../helpers/provisioner';

const samples = (text: string): string[] => text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

describe("go-choria's connector and protocol series", () => {
  it('exist at zero from the start under go-choria names, types and labels, and promtool only asks for the _total it cannot have', async () => {
    const registry = new Registry();
    new ConnectorMetrics(registry);
    new ProtocolMetrics(registry, 'v2');
    const text = await registry.metrics();
    expect(samples(text).sort()).toEqual(
      [
        'choria_connector_initial_connection_attempts 0',
        'choria_connector_reconnections 0',
        'choria_connector_connection_closed 0',
        'choria_connector_errors 0',
        'choria_connector_initial_connect_time_sum 0',
        'choria_connector_initial_connect_time_count 0',
        'choria_protocol_json_parse_failures{version="2"} 0',
        'choria_protocol_valid{version="2"} 0',
        'choria_protocol_invalid{version="2"} 0',
        'choria_protocol_error{version="2"} 0',
      ].sort(),
    );
    expect(text).toContain('# TYPE choria_connector_initial_connect_time summary');
    expect(text).toContain('# TYPE choria_protocol_valid counter');
    const { code, output } = await promtool(text);
    expect([0, 3]).toContain(code);
    expect(
      output
        .split('\n')
        .filter((l) => l.trim() !== '')
        .sort(),
    ).toEqual(CONNECTOR_NAMED_COUNTERS.map((n) => `${n} counter metrics should have "_total" suffix`).sort());
  });

  it('counts what go-choria counts: a valid hash, an invalid one, unparsable JSON, a schema break, any other protocol error', async () => {
    const registry = new Registry();
    const protocol = new ProtocolMetrics(registry, 'v1');
    const outcome = (reason?: ConstructorParameters<typeof ProtocolError>[0]) =>
      protocolOutcome(reason === undefined ? undefined : new ProtocolError(reason, 'transport', 'x'));
    expect([
      outcome(),
      outcome('hash'),
      outcome('not_json'),
      outcome('schema'),
      outcome('protocol'),
      outcome('base64'),
      outcome('oversized'),
    ]).toEqual(['valid', 'invalid', 'unparsable', 'schema', 'schema', 'error', 'error']);
    for (const o of ['valid', 'valid', 'invalid', 'unparsable', 'schema', 'error'] as const) protocol.observe(o);
    const text = samples(await registry.metrics());
    expect(text).toEqual(
      expect.arrayContaining([
        'choria_protocol_valid{version="1"} 2',
        'choria_protocol_invalid{version="1"} 2',
        'choria_protocol_json_parse_failures{version="1"} 1',
        'choria_protocol_error{version="1"} 3',
      ]),
    );
  });

  it("counts the connection's life: failed first attempts, the time to connect, reconnections, errors, closing", async () => {
    const registry = new Registry();
    const connector = new ConnectorMetrics(registry);
    connector.initialAttemptFailed();
    connector.initialAttemptFailed();
    connector.initiallyConnected(1.5);
    connector.reconnected();
    connector.error();
    connector.closed();
    expect(samples(await registry.metrics()).sort()).toEqual(
      [
        'choria_connector_initial_connection_attempts 2',
        'choria_connector_reconnections 1',
        'choria_connector_connection_closed 1',
        'choria_connector_errors 1',
        'choria_connector_initial_connect_time_sum 1.5',
        'choria_connector_initial_connect_time_count 1',
      ].sort(),
    );
  });
});
