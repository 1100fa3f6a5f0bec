import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { StatusOptions, StatusOutput, runStatus } from '../../bin/status/run';
import { SCRIPTED_HELPER, ProvisionerWorld, startProvisionerWorld } from '../helpers/provisioner';
import { useNatsServer } from '../helpers/nats';
import { waitFor } from '../helpers/waitFor';

// `rxfleet status` against a provisioner that makes its records stream itself (records_create, on
// a plain JetStream server), and what status does with a terminal, without one, and when there is
// nothing to read or nobody to ask. The three-instance agreement is spec/bin/provisionRecords.spec.ts.

jest.setTimeout(60_000);

const server = useNatsServer();

/** Collects what status writes. */
function output(isTTY: boolean): StatusOutput & { writes: string[]; errors: string[] } {
  const writes: string[] = [];
  const errors: string[] = [];
  return { writes, errors, isTTY, write: (t) => void writes.push(t), error: (t) => void errors.push(t) };
}

const options = (extra: Partial<StatusOptions> = {}): StatusOptions => ({
  nats: [server().url],
  apiPrefix: '$JS.API',
  electionBucket: 'CHORIA_LEADER_ELECTION',
  every: 50,
  ...extra,
});

describe('rxfleet status', () => {
  let world: ProvisionerWorld | undefined;
  beforeAll(async () => {
    world = await startProvisionerWorld(server().url, {
      helper: `${SCRIPTED_HELPER} by-identity`,
      yaml: ['rxfleet: {records: true, records_create: true, records_api_prefix: $JS.API, records_per_node: 20}'],
      fleet: { nodes: 4 },
      tuning: { instanceRecordEveryMs: 200 },
    });
    await waitFor(async () => (await world!.metric('choria_provisioner_provisioned')) === 4, 'the fleet to be provisioned');
    // And the instance's own record written since (every 200 ms here) says so: nothing in flight.
    await waitFor(async () => {
      const out = output(false);
      await runStatus({ ...options(), json: true }, undefined, out);
      const instance = out.writes
        .join('')
        .split('\n')
        .find((l) => l.includes('"type":"instance"'));
      return instance !== undefined && (JSON.parse(instance) as { inFlight: { count: number } }).inFlight.count === 0;
    }, "the instance's record to show the fleet done");
  });
  afterAll(async () => {
    await world?.stop();
  });

  it('rxfleet.records_create: the provisioner made the stream, with the limits of its keys, one replica on a single server', async () => {
    const nc = await connect({ servers: server().url });
    try {
      const { config } = await (await jetstreamManager(nc)).streams.info('RXFLEET_PROVISIONER_RECORDS');
      expect(config).toMatchObject({
        subjects: ['rxfleet.provisioner.records.>'],
        max_msgs_per_subject: 20,
        max_age: 7 * 24 * 3600 * 1e9,
        max_bytes: 1024 ** 3,
        num_replicas: 1,
        discard: 'old',
      });
    } finally {
      await nc.close();
    }
  });

  it('--watch on a terminal redraws in place (home, clear, the table) until stopped', async () => {
    const out = output(true);
    const stop = new AbortController();
    const ran = runStatus({ ...options(), watch: true }, undefined, out, stop.signal);
    await waitFor(() => out.writes.length >= 3, 'three looks');
    stop.abort();
    expect(await ran).toBe(0);
    for (const write of out.writes) {
      expect(write.startsWith('\x1b[H\x1b[2J')).toBe(true);
      expect(write).toMatch(/^prov\.example\.net\s+single\s+\S+ ago\s+0\s+0\s+0\s+/m);
      expect(write).toContain('last cycle of each node recorded: 4 provisioned');
    }
  });

  it('--watch elsewhere prints each look after the last, and --json each as JSON lines', async () => {
    const out = output(false);
    const stop = new AbortController();
    const ran = runStatus({ ...options(), watch: true, json: true }, undefined, out, stop.signal);
    await waitFor(() => out.writes.length >= 2, 'two looks');
    stop.abort();
    expect(await ran).toBe(0);
    for (const write of out.writes) {
      expect(write).not.toContain('\x1b[');
      const lines = write
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.map((l) => l.type)).toEqual(['instance', 'fleet']);
      expect(lines[1]).toMatchObject({ lastOutcomes: { provisioned: 4 }, failing: { count: 0 } });
    }
  });

  it('history NODE --limit: the newest cycles only', async () => {
    const out = output(false);
    expect(await runStatus({ ...options(), json: true, limit: 1 }, 'node-1.example.net', out)).toBe(0);
    const records = out.writes.join('').trim().split('\n');
    expect(records).toHaveLength(1);
    expect(JSON.parse(records[0])).toMatchObject({ node: 'node-1.example.net', instance: 'prov.example.net', outcome: 'provisioned' });
  });

  it('nothing to read (no such stream, no bucket): says so and exits 1', async () => {
    const out = output(false);
    expect(await runStatus(options({ recordsStream: 'NOT_THERE' }), undefined, out)).toBe(1);
    expect(out.writes.join('')).toContain('note: the records stream NOT_THERE is not there: set rxfleet.records: true');
  });

  it('a broker that cannot be reached: one line, exit 1, no credentials in it', async () => {
    const out = output(false);
    expect(await runStatus(options({ nats: ['nats://ops:hunter2@127.0.0.1:1'] }), undefined, out)).toBe(1);
    expect(out.errors).toHaveLength(1);
    expect(out.errors[0]).toMatch(/^rxfleet status: /);
    expect(out.errors[0]).not.toContain('hunter2');
  });
});
