import { join, resolve } from 'node:path';
import { useNatsServer } from '../../helpers/nats';
import { SAMPLE_HELPERS, capturingLogger, startProvisionerWorld } from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';

const PERSISTENT_SCRIPTED = resolve(__dirname, '../../fixtures/helpers/persistent-scripted-helper.mjs');
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

// The daemon with `rxfleet.helper_mode: persistent`, end to end over a real nats-server, with real
// helper processes: the shipped samples, and one that dies on purpose.
describe('the provisioner daemon with a persistent helper', () => {
  const server = useNatsServer();

  it.each(['persistent-helper.mjs', 'persistent-helper.sh'])(
    'provisions every node once through the sample %s, two processes answering',
    async (sample) => {
      const world = await startProvisionerWorld(server().url, {
        helper: join(SAMPLE_HELPERS, sample),
        workers: 6,
        yaml: ['rxfleet: {helper_mode: persistent, helper_processes: 2}'],
        fleet: { nodes: 12 },
      });
      try {
        await waitFor(() => world.fleet().stats().provisioned === 12, 'every node to be provisioned', 30_000);
        const stats = world.fleet().stats();
        expect({ configured: stats.configured, duplicates: stats.duplicates }).toEqual({ configured: 12, duplicates: 0 });
        expect(
          world
            .fleet()
            .nodes()
            .every((n) => n.configuration?.['plugin.choria.server.provision'] === 'false'),
        ).toBe(true);
        expect(await world.metric('choria_provisioner_helper_processes', { site: 'spec' })).toBe(2);
        expect(await world.metric('choria_provisioner_helper_time_count', { site: 'spec' })).toBe(12);
        expect(await world.metric('choria_provisioner_helper_errors', { site: 'spec' })).toBe(0);
      } finally {
        await world.stop();
      }
    },
  );

  it('a helper process that dies mid-run: the nodes in flight on it fail and are retried, and every node ends provisioned once', async () => {
    const world = await startProvisionerWorld(server().url, {
      helper: `${PERSISTENT_SCRIPTED} die-after 3`,
      workers: 4,
      yaml: ['rxfleet: {helper_mode: persistent, helper_processes: 1}'],
      // Rediscovery every half second retries the failed nodes.
      tuning: { intervalMs: 500 },
      fleet: { nodes: 10 },
    });
    try {
      await waitFor(() => world.fleet().stats().provisioned === 10, 'every node to be provisioned', 30_000);
      expect(world.fleet().stats().duplicates).toBe(0);
      expect(await world.metric('choria_provisioner_helper_restarts_total', { site: 'spec', reason: 'exit' })).toBeGreaterThanOrEqual(2);
      const errors = await world.metric('choria_provisioner_helper_errors', { site: 'spec' });
      expect(errors).toBeGreaterThanOrEqual(2);
      expect(await world.metric('choria_provisioner_provision_errors', { site: 'spec' })).toBe(errors);
    } finally {
      await world.stop();
    }
  });

  it('stopping the daemon ends its helper processes', async () => {
    const { logger, messages } = capturingLogger();
    const world = await startProvisionerWorld(server().url, {
      helper: join(SAMPLE_HELPERS, 'persistent-helper.mjs'),
      yaml: ['rxfleet: {helper_mode: persistent, helper_processes: 2}'],
      fleet: { nodes: 2 },
      logger,
    });
    await waitFor(() => world.fleet().stats().provisioned === 2, 'the nodes to be provisioned', 30_000);
    const pids = messages()
      .flatMap((m) => /^started persistent helper process (\d+) /.exec(m)?.[1] ?? [])
      .map(Number);
    expect(pids).toHaveLength(2);
    expect(pids.filter(alive)).toHaveLength(2);
    await world.stop();
    await waitFor(() => pids.filter(alive).length === 0, 'the helper processes to exit', 5000);
  });
});
