import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NatsConnection, connect } from '@nats-io/transport-node';
import { decodeRequest } from '../../lib/choria/protocol/codec';
import { decodeAgentRequest } from '../../lib/choria/protocol/mcorpc';
import type { RequestRecord } from '../../streams/simulate/simulatedFleet';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { useNatsServer } from '../helpers/nats';
import { RxfleetProcess, startRxfleet } from '../helpers/rxfleetProcess';
import { createTestCa } from '../helpers/testCa';

// `rxfleet provision --dry-run` (DECISIONS P23) against a fleet from `rxfleet simulate --trace`,
// with every message on the broker counted by a tap subscribed to `>`: the only requests the dry
// run sends are one discovery round and one inventory per node; never a choria_provision action
// (configure, restart, gen25519, gencsr, release_update, shutdown, nor jwt, which takes the node's
// provisioning lock), nothing to a KV bucket or JetStream, no startup event of its own.

jest.setTimeout(90_000);

const SIGNING_HELPER = resolve(__dirname, '../fixtures/helpers/signing-helper.mjs');
const TOKEN = 'dry-run-token';
const server = useNatsServer();

/** Every message on the broker: its subject, and for a Choria request its agent and action. */
interface Tapped {
  subject: string;
  request?: { agent: string; action: string; caller: string };
}

function tap(nc: NatsConnection): Tapped[] {
  const seen: Tapped[] = [];
  nc.subscribe('>', {
    callback: (_error, m) => {
      const decoded = decodeRequest(m.data, { checkTtl: false });
      if (!decoded.ok) return void seen.push({ subject: m.subject });
      const { agent, payload, callerId } = decoded.value;
      const body = decodeAgentRequest(payload);
      seen.push({ subject: m.subject, request: { agent, action: body.ok ? body.value.action : payload, caller: callerId } });
    },
  });
  return seen;
}

/** Every request tapped, as `agent#action` (the dry runs are the only ones asking anything here). */
const requestsOf = (seen: Tapped[]): string[] =>
  seen.filter((t) => t.request !== undefined).map((t) => `${t.request!.agent}#${t.request!.action}`);

/** Who sent the requests tapped. */
const callersOf = (seen: Tapped[]): string[] => [...new Set(seen.filter((t) => t.request !== undefined).map((t) => t.request!.caller))];

describe('rxfleet provision --dry-run, every request on the wire counted', () => {
  let dir: string;
  let fleet: RxfleetProcess;
  let observer: NatsConnection;
  let seen: Tapped[];
  const env: Record<string, string> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-dry-run-'));
    const ca = await createTestCa('dry run CA');
    writeFileSync(join(dir, 'ca.pem'), ca.cert);
    writeFileSync(join(dir, 'ca.key'), ca.key);
    env.RXFLEET_SPEC_CA_CERT = join(dir, 'ca.pem');
    env.RXFLEET_SPEC_CA_KEY = join(dir, 'ca.key');
    const seed = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex');
    writeFileSync(join(dir, 'signer.seed'), seed);
    writeFileSync(join(dir, 'choria.cfg'), `identity = rehearsal.example.net\nplugin.choria.middleware_hosts = ${server().url}\n`);
    observer = await connect({ servers: server().url });
    seen = tap(observer);
    await observer.flush();
    fleet = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      '5',
      '--token',
      TOKEN,
      '--json',
      '--trace',
      '--report-every',
      '0',
    ]);
    await fleet.next((l) => l.type === 'ready');
  });
  afterAll(async () => {
    fleet.child.kill('SIGTERM');
    await fleet.exited;
    await observer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const dryRun = async (name: string, yaml: string[], args: string[]): Promise<RxfleetProcess> => {
    const config = join(dir, `${name}.yaml`);
    writeFileSync(config, [`token: ${TOKEN}`, 'choria_insecure: true', 'workers: 2', ...yaml].join('\n'));
    const run = startRxfleet(['provision', '--dry-run', '--config', config, '--choria-config', join(dir, 'choria.cfg'), ...args], { env });
    const exit = await run.exited;
    if (exit.code !== 0) throw new Error(`the dry run exited ${exit.code}: ${run.stderr()}`);
    await observer.flush();
    return run;
  };

  it('pki: reports each node’s configuration keys and certificate, and sends only the discovery round and one inventory per node', async () => {
    const run = await dryRun('pki', [`helper: ${SIGNING_HELPER}`, 'features: {pki: true}'], ['--json']);
    const reports = run.lines.filter((l) => l.type === 'node');
    expect(reports.map((r) => r.node)).toEqual(expect.arrayContaining([1, 2, 3, 4, 5].map((n) => `node-${n}.example.net`)));
    expect(reports).toHaveLength(5);
    for (const report of reports) {
      const node = String(report.node);
      expect(report).toMatchObject({
        would: 'configure',
        decision: { kind: 'configure', msg: `signed for ${node} (dry run: 1)`, certificate: true, ca: true, key: false },
        certificate: { subject: `CN=${node}`, issuer: 'CN=dry run CA', validDays: 30, dnsNames: [node] },
        ca: 'CN=dry run CA',
      });
      expect((report.decision as { keys: string[] }).keys).toEqual([
        'identity',
        'plugin.choria.server.provision',
        'plugin.security.file.certificate',
        'plugin.security.provider',
      ]);
      expect(report.notes).toEqual([expect.stringMatching(/^gencsr was not sent/)]);
    }
    expect(run.lines.find((l) => l.type === 'summary')).toEqual({
      type: 'summary',
      discovered: 5,
      reported: 5,
      would: { configure: 5, defer: 0, shutdown: 0, upgrade: 0, fail: 0 },
    });

    // The wire: one discovery round, one inventory per node, nothing else from the dry run.
    expect(callersOf(seen)).toEqual([expect.stringMatching(/^choria=rehearsal/)]);
    expect(requestsOf(seen).sort()).toEqual(['discovery#ping', ...Array(5).fill('rpcutil#inventory')]);
    // The fleet's own trace says the same, node by node.
    const traced = fleet.lines.filter((l) => l.type === 'request') as unknown as RequestRecord[];
    expect(traced.filter((r) => r.agent === 'choria_provision')).toEqual([]);
    expect(
      traced
        .filter((r) => r.action === 'inventory')
        .map((r) => r.identity)
        .sort(),
    ).toEqual([1, 2, 3, 4, 5].map((n) => `node-${n}.example.net`));
  });

  it('ed25519 with --limit 2: the server JWT claims it would sign for the first two nodes; still no request that writes', async () => {
    const before = seen.length;
    const run = await dryRun(
      'ed25519',
      [
        `helper: ${MINIMAL_HELPER}`,
        'features: {ed25519: true}',
        `jwt_signing_key: ${join(dir, 'signer.seed')}`,
        'server_jwt_validity: 30d',
      ],
      ['--json', '--limit', '2'],
    );
    const reports = run.lines.filter((l) => l.type === 'node');
    expect(reports.map((r) => r.node)).toEqual(['node-1.example.net', 'node-2.example.net']);
    for (const report of reports) {
      const claims = report.serverJwt as Record<string, unknown>;
      expect(claims).toMatchObject({
        identity: report.node,
        purpose: 'choria_server',
        iss: 'Choria Provisioner',
        collectives: ['mcollective'],
      });
      expect(Number(claims.exp) - Number(claims.iat)).toBe(30 * 86_400);
      expect(report.notes).toEqual([
        expect.stringMatching(/^the node's provisioning JWT was not asked for \(jwt takes its provisioning lock/),
        expect.stringMatching(/^gen25519 was not sent/),
      ]);
    }
    expect(run.lines.find((l) => l.type === 'summary')).toMatchObject({ discovered: 5, reported: 2 });
    const mine = seen.slice(before);
    expect(requestsOf(mine).sort()).toEqual(['discovery#ping', 'rpcutil#inventory', 'rpcutil#inventory']);
    // Nothing to JetStream or a bucket, and no startup event announcing a provisioner.
    expect(mine.filter((t) => t.subject.startsWith('$JS.') || t.subject.startsWith('$KV.'))).toEqual([]);
    expect(mine.filter((t) => t.subject === 'choria.lifecycle.event.startup.provisioner')).toEqual([]);
  });

  it('--limit and --json without --dry-run: refused in one line, nothing started', async () => {
    const run = startRxfleet(['provision', '--config', join(dir, 'pki.yaml'), '--limit', '2']);
    expect((await run.exited).code).toBe(1);
    expect(run.stderr().trim().split('\n')[0]).toBe('error: --limit and --json go with --dry-run');
  });

  it('people read it as a table: what it would do to each node, then the summary', async () => {
    const run = await dryRun('table', [`helper: ${SIGNING_HELPER}`, 'features: {pki: true}'], ['--limit', '1']);
    const lines = run.stdout().trim().split('\n');
    expect(lines[0]).toBe(
      'node-1.example.net: would configure 4 keys: identity, plugin.choria.server.provision, plugin.security.file.certificate, plugin.security.provider; then restart it',
    );
    expect(lines[1]).toMatch(
      /^ {2}certificate: CN=node-1\.example\.net \(DNS node-1\.example\.net\), issued by CN=dry run CA, valid .* \(30 days\)$/,
    );
    expect(lines.at(-1)).toBe(
      'dry run: 5 nodes in provisioning mode, 1 reported (--limit 1): 1 would be configured, 0 deferred, 0 shut down, 0 upgraded, 0 would fail; nothing was sent that changes a node',
    );
    // Still not one choria_provision request from anyone, over the three runs.
    expect(seen.filter((t) => t.request?.agent === 'choria_provision')).toEqual([]);
  });
});
