import { connect } from '@nats-io/transport-node';
import { join } from 'node:path';
import { createClaimsBucket } from '../../../streams/claims/claimsBucket';
import { useNatsServer } from '../../helpers/nats';
import { SAMPLE_HELPERS, UPSTREAM_NAME_FINDINGS, promtool, startProvisionerWorld } from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';

const activeActive = (bucket: string): string[] => [
  `rxfleet: {mode: active-active, claims_bucket: ${bucket}, claims_api_prefix: $JS.API, helper_mode: persistent, helper_processes: 2}`,
];

// One daemon in active-active mode with the persistent helper, in process, on a plain JetStream
// server ($JS.API): its set-up, its metrics. Several instances as processes on a Choria-style
// broker are in spec/bin/provisionActiveActive.spec.ts.
describe('the provisioner daemon in active-active mode', () => {
  const server = useNatsServer();

  it('waits, paused and not ready, until the claims bucket can be read, counting each failed attempt; then discovers at once and provisions', async () => {
    const world = await startProvisionerWorld(server().url, {
      helper: join(SAMPLE_HELPERS, 'persistent-helper.mjs'),
      yaml: activeActive('SPEC_CLAIMS_LATE'),
      fleetFirst: true,
      fleet: { nodes: 5 },
      tuning: { claimsSetupRetryMs: () => 100 },
    });
    try {
      await waitFor(
        async () => (await world.metric('choria_provisioner_claim_errors_total', { operation: 'setup' })) >= 2,
        'two failed set-ups',
      );
      expect(world.daemon.ready()).toBe(false);
      expect(await world.metric('choria_provisioner_paused')).toBe(1);
      expect(world.fleet().stats().configured).toBe(0);

      const admin = await connect({ servers: server().url });
      await createClaimsBucket(admin, { ttlMs: 120_000, bucket: 'SPEC_CLAIMS_LATE' });
      await admin.close();
      // The fleet booted long before: only a round run once the bucket is read finds it.
      await waitFor(() => world.fleet().stats().provisioned === 5, 'the fleet to be provisioned', 20_000);
      expect(world.daemon.ready()).toBe(true);
      expect(await world.metric('choria_provisioner_paused')).toBe(0);
      expect(await world.metric('choria_provisioner_claims_total', { result: 'won', identity: 'prov.example.net' })).toBe(5);
      expect(await world.metric('choria_provisioner_claims_held')).toBe(0);
    } finally {
      await world.stop();
    }
  });

  it('every claim and persistent-helper series exists at zero from the start, and promtool finds nothing new to lint', async () => {
    const admin = await connect({ servers: server().url });
    await createClaimsBucket(admin, { ttlMs: 120_000, bucket: 'SPEC_CLAIMS' });
    await admin.close();
    const world = await startProvisionerWorld(server().url, {
      helper: join(SAMPLE_HELPERS, 'persistent-helper.mjs'),
      yaml: activeActive('SPEC_CLAIMS'),
      noFleet: true,
    });
    try {
      await waitFor(() => world.daemon.ready(), 'the claims bucket to be read');
      for (const result of ['won', 'lost', 'lapsed', 'kept'])
        expect(await world.metric('choria_provisioner_claims_total', { site: 'spec', identity: 'prov.example.net', result })).toBe(0);
      for (const operation of ['setup', 'create', 'refresh', 'release'])
        expect(await world.metric('choria_provisioner_claim_errors_total', { operation })).toBe(0);
      for (const reason of ['exit', 'timeout', 'protocol', 'oversize', 'start'])
        expect(await world.metric('choria_provisioner_helper_restarts_total', { site: 'spec', reason })).toBe(0);
      expect(await world.metric('choria_provisioner_claims_held')).toBe(0);
      await waitFor(async () => (await world.metric('choria_provisioner_helper_processes')) === 2, 'the helper processes to start');
      const { code, output } = await promtool(await world.scrape());
      expect([0, 3]).toContain(code);
      expect(
        output
          .split('\n')
          .filter((l) => l.trim() !== '')
          .sort(),
      ).toEqual([...UPSTREAM_NAME_FINDINGS].sort());
    } finally {
      await world.stop();
    }
  });
});
