import { CycleRecord } from '../../../../lib/provision/records/cycleRecord';
import { InstanceRecord } from '../../../../lib/provision/records/instanceRecord';
import { fleetStatus } from '../../../../lib/provision/status/fleetStatus';
import { historyLines, statusLines } from '../../../../lib/provision/status/statusText';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const iso = (msAgo: number): string => new Date(NOW - msAgo).toISOString();

function instance(name: string, overrides: Partial<InstanceRecord> = {}): InstanceRecord {
  return {
    type: 'instance',
    v: 1,
    instance: name,
    site: 'lab',
    version: '0.1.0',
    mode: 'leader_election',
    leader: false,
    paused: true,
    state: 'running',
    connection: 'connected',
    workers: 4,
    held: 0,
    waiting: { count: 0 },
    inFlight: { count: 0 },
    failing: { count: 0 },
    backoffCeilingMs: 3_600_000,
    startedAt: iso(600_000),
    at: iso(2_000),
    every: 10_000,
    ...overrides,
  };
}

function cycle(node: string, outcome: CycleRecord['outcome'], extra: Partial<CycleRecord> = {}): CycleRecord {
  return {
    type: 'cycle',
    v: 1,
    node,
    instance: 'a',
    site: 'lab',
    sighting: { via: 'discovery', at: iso(60_000) },
    ended: iso(50_000),
    outcome,
    steps: [],
    ...extra,
  };
}

describe('fleetStatus', () => {
  it('names the leader from the election key, the others standby; an instance silent for three periods is gone', () => {
    const status = fleetStatus({
      now: NOW,
      instances: [
        instance('b', { leader: true, paused: false, waiting: { count: 3, oldest: { node: 'n7', since: iso(40_000) } } }),
        instance('a'),
        instance('c', { at: iso(31_000), waiting: { count: 9 } }),
        // Its last word: stopped, so gone at once.
        instance('d', { state: 'stopped' }),
      ],
      nodes: [],
      election: { leader: 'b', at: NOW - 5_000, ttlMs: 60_000 },
    });
    expect(status.instances.map((i) => [i.instance, i.role])).toEqual([
      ['a', 'standby'],
      ['b', 'leader'],
      ['c', 'gone'],
      ['d', 'gone'],
    ]);
    // A gone instance's queue is not counted: it is not working on it.
    expect(status.waiting).toEqual({ count: 3, oldest: { node: 'n7', since: iso(40_000) } });
    expect(status.election).toEqual({ leader: 'b', writtenMsAgo: 5_000, expiresInMs: 55_000 });
  });

  it('a leader with no records of its own (the Go provisioner, or records off) is shown all the same', () => {
    const status = fleetStatus({
      now: NOW,
      instances: [instance('a')],
      nodes: [],
      election: { leader: 'go-prov', at: NOW - 1_000, ttlMs: 60_000 },
    });
    expect(status.instances.map((i) => [i.instance, i.role, i.seenMsAgo])).toEqual([
      ['go-prov', 'leader', undefined],
      ['a', 'standby', 2_000],
    ]);
    expect(statusLines(status)[1]).toMatch(/^go-prov\s+leader\s+no records/);
  });

  it('counts nodes by their last cycle, the failing ones with the one failing longest and its next try; claims by owner', () => {
    const status = fleetStatus({
      now: NOW,
      instances: [instance('a', { mode: 'active-active' }), instance('b', { mode: 'active-active' })],
      nodes: [
        cycle('ok-1', 'provisioned'),
        cycle('bad-1', 'failed', { backoff: { failures: 3, failingSince: iso(900_000), retryAfter: iso(-120_000) } }),
        cycle('bad-2', 'failed', { backoff: { failures: 1, failingSince: iso(60_000), retryAfter: iso(0) } }),
        cycle('gone-1', 'shutdown'),
      ],
      claims: {
        entries: [
          { node: 'x1', owner: 'a', at: NOW - 1_000 },
          { node: 'x2', owner: 'a', at: NOW - 2_000 },
          { node: 'x3', owner: 'b', at: NOW - 99_000 },
        ],
        ttlMs: 30_000,
      },
    });
    expect(status.lastOutcomes).toEqual({ provisioned: 1, failed: 2, shutdown: 1 });
    expect(status.failing).toEqual({ count: 2, oldest: { node: 'bad-1', since: iso(900_000) }, nextTry: iso(-120_000) });
    // x3 is older than a claim lives: it lapsed.
    expect(status.instances.map((i) => [i.instance, i.role, i.claims])).toEqual([
      ['a', 'active', 2],
      ['b', 'active', 0],
    ]);
    expect(status.claims).toEqual({ held: 2, ttlMs: 30_000 });
    const lines = statusLines(status);
    expect(lines.find((l) => l.startsWith('failing'))).toBe(`failing    2      bad-1 for 15m0s, next try ${iso(-120_000)}`);
    expect(lines).toContain('last cycle of each node recorded: 2 failed, 1 provisioned, 1 shutdown');
  });

  it("history: the node's state, then each cycle newest first, step by step with the reason it stopped", () => {
    const lines = historyLines(
      'n1',
      [
        cycle('n1', 'failed', {
          instance: 'b',
          claim: { revision: 7 },
          ms: 1_500,
          steps: [
            { step: 'inventory', outcome: 'ok', ms: 12, attempts: 1 },
            { step: 'helper', outcome: 'ok', ms: 1_400 },
          ],
          decision: {
            kind: 'defer',
            msg: 'CA busy',
            keys: [],
            policies: [],
            certificate: false,
            ca: false,
            key: false,
            serverClaims: false,
          },
          error: { step: 'defer', message: 'configuration defered: CA busy' },
          backoff: { failures: 2, failingSince: iso(200_000), retryAfter: iso(-100_000) },
        }),
        cycle('n1', 'failed', {
          instance: 'a',
          steps: [{ step: 'inventory', outcome: 'failed', ms: 22_000, attempts: 5, error: 'timed out' }],
        }),
      ],
      { node: 'n1', owner: 'b', at: NOW - 3_000 },
      NOW,
    );
    expect(lines).toEqual([
      `n1: failing since ${iso(200_000)} (2 failures in a row), next try after ${iso(-100_000)}`,
      'claimed by b, written 3s ago',
      '',
      `${iso(50_000)}  b  sighted via discovery, claim revision 7: failed at defer: configuration defered: CA busy in 1.5s`,
      '    inventory   ok       12ms 1 attempt',
      '    helper      ok       1.4s',
      '    helper decided: defer ("CA busy")',
      '',
      `${iso(50_000)}  a  sighted via discovery: failed: unknown error`,
      '    inventory   failed    22s 5 attempts: timed out',
    ]);
  });
});
