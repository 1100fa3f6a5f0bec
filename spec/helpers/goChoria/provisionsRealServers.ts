import { readFileSync } from 'node:fs';
import { ChoriaSite, startChoriaSite } from './choriaSite';
import type { ChoriaServer } from './choriaServers';
import type { SiteFlow } from './siteCredentials';
import { RxfleetProcess, killAll, startRxfleet } from '../rxfleetProcess';
import { waitFor } from '../waitFor';

/** What one of upstream's flows leaves on a provisioned server beside its configuration. */
export interface ProvisioningFlow {
  readonly flow: SiteFlow;
  /** The security provider a configured server runs on. */
  readonly provider: 'file' | 'choria';
  /** The flow's own credentials on the server, checked for its identity. */
  readonly expectCredentials: (server: ChoriaServer) => void;
}

/** The real site a describe shares, and the rxfleet processes its tests start (stopped after). */
export interface RealSite {
  readonly site: () => ChoriaSite;
  readonly running: RxfleetProcess[];
}

/**
 * Starts a real site of `servers` go-choria servers in provisioning mode on `flow` before the
 * describe's tests, and stops it, and every rxfleet process they started, after them. Call it in
 * a describe.
 */
export function useRealSite(flow: SiteFlow, servers: number): RealSite {
  let site: ChoriaSite | undefined;
  const running: RxfleetProcess[] = [];
  beforeAll(async () => {
    site = await startChoriaSite({ flow, servers });
  }, 60_000);
  afterAll(async () => {
    await killAll(running.splice(0));
    await site?.stop();
  }, 30_000);
  return {
    site: () => {
      if (site === undefined) throw new Error('the real site did not start');
      return site;
    },
    running,
  };
}

/**
 * The test every flow shares: one `rxfleet provision` (leader election on, 8 workers) against the
 * real site, and afterwards every server out of provisioning mode on its flow's provider, found by
 * go-choria's own `choria ping`, provisioned once and restarted by its own re-exec.
 */
export async function expectEveryServerProvisioned(real: RealSite, { provider, expectCredentials }: ProvisioningFlow): Promise<void> {
  const site = real.site();
  const servers = site.servers.servers.length;
  const yaml = site.provisionerConfig('provisioner', ['workers: 8', 'site: spec', 'leader_election: true']);
  const provisioner = startRxfleet(['provision', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], {
    env: site.helper.env,
  });
  real.running.push(provisioner);

  await waitFor(async () => (await site.ping(servers)).length === servers, `choria ping to find all ${servers} servers configured`, 90_000);
  expect(await site.ping(servers)).toEqual([...site.servers.identities].sort());

  for (const server of site.servers.servers) {
    const config = readFileSync(server.configFile, 'utf8');
    expect(config).toContain('plugin.choria.server.provision=false');
    expect(config).toContain(`plugin.security.provider=${provider}`);
    expectCredentials(server);
    expect(server.log()).toContain('Initiating Choria Server restart');
  }
  // Each server was provisioned once: one configure, one restart.
  const provisioned = provisioner.lines.filter((l) => l.result === 'provisioned').map((l) => l.identity);
  expect([...provisioned].sort()).toEqual([...site.servers.identities].sort());
  // Every restart was the server's own re-exec; none needed the service manager.
  expect(site.servers.servers.map((s) => s.restarts())).toEqual(site.servers.servers.map(() => 0));
}
