import { Observable } from 'rxjs';
import { AdmissionLedger, done, failed } from '@rxfleet/operators';
import { ActionSpec } from '../../../../lib/choria/agents';
import { RpcTimeoutError } from '../../../../lib/choria/errors';
import { parseProvisionerConfig, requireValidConfig } from '../../../../lib/provision/config/config';
import { CycleTraces } from '../../../../lib/provision/cycle/cycleTrace';
import { HelperResponse } from '../../../../lib/provision/helper/helperResponse';
import { NodeBackoff } from '../../../../lib/provision/backoff/nodeBackoff';
import { CycleError, ProvisionCycle } from '../../../../lib/provision/cycle/provisionCycle';
import { HostTicket, Sighting } from '../../../../lib/provision/sightings/sighting';
import { cycleRecord, isCycleRecord } from '../../../../lib/provision/records/cycleRecord';
import { nodeSubject } from '../../../../lib/provision/records/recordSubjects';
import { nodeSiteFiles } from '../../../../streams/siteFiles';
import { newScheduler } from '../../../helpers/marbles';

const TOKEN = 'tok-3141';

/** A node that answers each RPC; `inventory` times out on its first attempt. */
function flakyInventoryNode() {
  let inventoryAttempts = 0;
  return {
    call<I extends object, O>(spec: ActionSpec<I, O>, identity: string): Observable<{ data: O; statuscode: number; statusmsg: string }> {
      return new Observable((subscriber) => {
        if (spec.rpc === 'rpcutil#inventory' && inventoryAttempts++ === 0) {
          subscriber.error(new RpcTimeoutError(spec.rpc, identity, 10));
          return;
        }
        const data = spec.rpc === 'rpcutil#inventory' ? { agents: [], version: '0.29.4' } : { message: 'ok' };
        subscriber.next({ data: data as O, statuscode: 0, statusmsg: 'OK' });
        subscriber.complete();
      });
    },
  };
}

const answer = (response: Partial<HelperResponse>): HelperResponse => ({
  defer: false,
  shutdown: false,
  msg: '',
  configuration: {},
  actionPolicies: {},
  opaPolicies: {},
  certificate: '',
  ca: '',
  key: '',
  ssldir: '',
  serverClaims: undefined,
  upgrade: '',
  ...response,
});

/** A ticket as admission makes one. */
function ticketFor(identity: string, sighting: Partial<Sighting> = {}): HostTicket {
  const ledger = new AdmissionLedger<Sighting, string>({ key: (s) => s.identity, window: 1000, capacity: 10, scheduler: newScheduler() });
  const admission = ledger.offer({ identity, via: 'discovery', ...sighting });
  if (!admission.admitted) throw new Error('not admitted');
  return admission.ticket;
}

describe('a cycle traced for its record (P21)', () => {
  const config = requireValidConfig(parseProvisionerConfig(`helper: /bin/true\ntoken: ${TOKEN}\n`));

  it('notes each step with its outcome, duration and attempts, and the decision with keys but no values or token', async () => {
    const traces = new CycleTraces(() => 0);
    const cycle = new ProvisionCycle({
      config,
      client: flakyInventoryNode(),
      helper: {
        run: async () =>
          answer({
            msg: `configured with ${TOKEN}`,
            configuration: { 'plugin.choria.server.provision': 'false', 'plugin.security.file.key': '/etc/secret.pem', identity: 'n1' },
            actionPolicies: { 'default.policy': 'policy text' },
            certificate: '-----BEGIN CERTIFICATE-----',
            key: '-----BEGIN PRIVATE KEY-----',
          }),
      },
      files: nodeSiteFiles,
      backoffMs: [1],
      random: () => 0,
      traces,
      clock: () => 0,
    });
    // A key comes back without the jwt feature: the cycle fails at private_key, after the helper.
    await expect(cycle.run({ identity: 'n1', sightedAt: 0 })).rejects.toBeInstanceOf(CycleError);
    const trace = traces.take('n1');
    expect(trace?.steps.map((s) => [s.step, s.outcome, s.attempts])).toEqual([
      ['inventory', 'ok', 2],
      ['helper', 'ok', undefined],
      ['private_key', 'failed', undefined],
    ]);
    expect(trace?.steps[2].error).toMatch(/Diffie-Hellman/);
    expect(trace?.helper).toEqual({
      kind: 'configure',
      msg: 'configured with [redacted]',
      keys: ['identity', 'plugin.choria.server.provision', 'plugin.security.file.key'],
      policies: ['default.policy'],
      certificate: true,
      ca: false,
      key: true,
      serverClaims: false,
    });
    expect(JSON.stringify(trace)).not.toContain(TOKEN);
    expect(JSON.stringify(trace?.helper)).not.toContain('/etc/secret.pem');
    expect(traces.take('n1')).toBeUndefined();
  });

  it('a record says who sighted the node, how the cycle ended, the claim, and the backoff the node now waits', async () => {
    const traces = new CycleTraces(() => 1_000);
    const trace = traces.begin('n1');
    await trace.step('inventory', async () => ({}));
    await expect(trace.step('helper', () => Promise.reject(new Error('could not wait for helper: exit status 1')))).rejects.toThrow();
    traces.end(trace);
    const backoff = new NodeBackoff({ baseMs: 60_000, ceilingMs: 3_600_000 });
    const error = new CycleError('n1', 'helper', 'could not wait for helper: exit status 1');
    backoff.settle('n1', failed(error), 1_000);
    const record = cycleRecord({
      result: { ticket: ticketFor('n1', { via: 'event' }), outcome: failed(error) },
      trace: traces.take('n1'),
      instance: 'prov-a.example.net',
      site: 'lab',
      claimRevision: 42,
      backoff: backoff.entry('n1'),
      now: 1_000,
      wallNow: Date.parse('2026-01-01T00:00:01Z'),
    });
    expect(record).toMatchObject({
      type: 'cycle',
      v: 1,
      node: 'n1',
      instance: 'prov-a.example.net',
      site: 'lab',
      sighting: { via: 'event', at: '2026-01-01T00:00:00.000Z' },
      started: '2026-01-01T00:00:01.000Z',
      ended: '2026-01-01T00:00:01.000Z',
      outcome: 'failed',
      error: { step: 'helper', message: 'could not wait for helper: exit status 1' },
      claim: { revision: 42 },
      backoff: { failures: 1, failingSince: '2026-01-01T00:00:01.000Z', retryAfter: '2026-01-01T00:00:01.000Z' },
    });
    expect(record?.steps.map((s) => s.outcome)).toEqual(['ok', 'failed']);
    expect(isCycleRecord(JSON.parse(JSON.stringify(record)))).toBe(true);
  });

  it('no record for a ticket that ran nothing and failed no node: skipped, or claimed by another instance', () => {
    const base = { trace: undefined, instance: 'i', site: '', now: 0, wallNow: 0 };
    expect(cycleRecord({ ...base, result: { ticket: ticketFor('n1'), outcome: { status: 'skipped' } } })).toBeUndefined();
    expect(cycleRecord({ ...base, result: { ticket: ticketFor('n1'), outcome: done('claimed') } })).toBeUndefined();
    // A stale sighting refused by the claim stage ran no step but failed: it is recorded.
    expect(
      cycleRecord({ ...base, result: { ticket: ticketFor('n1'), outcome: failed(new CycleError('n1', 'stale', 'waited too long')) } }),
    ).toMatchObject({ outcome: 'failed', steps: [], error: { step: 'stale' } });
  });

  it('subjects: a host name as it is, anything else in one token', () => {
    expect(nodeSubject('ops.records', 'node-1.example.net')).toBe('ops.records.node.node-1.example.net');
    expect(nodeSubject('ops.records', 'bad name>*')).toBe(`ops.records.node.=${Buffer.from('bad name>*').toString('base64url')}`);
  });
});
