import { existsSync } from 'node:fs';
import { DAEMON_KINDS, startTestDaemon } from '../helpers/testDaemon';

// The harness the Incus and LXD integration specs stand on: two private daemons of a kind side by
// side, each with its own bridge and subnet, instances that really start and lease an address,
// and nothing of either left once stopped.
describe.each(DAEMON_KINDS)('the private %s daemon of a suite', (kind) => {
  it('runs beside another one, starts instances with a DHCP lease, and leaves nothing behind', async () => {
    const [a, b] = await Promise.all([startTestDaemon(kind), startTestDaemon(kind)]);
    try {
      expect(a.dir).not.toBe(b.dir);
      expect(a.bridge).not.toBe(b.bridge);
      expect(a.gateway).not.toBe(b.gateway);

      await Promise.all([a.launch('h1'), b.launch('h1')]);
      const [ipA, ipB] = await Promise.all([a.waitForIPv4('h1'), b.waitForIPv4('h1')]);
      expect(ipA.split('.').slice(0, 3).join('.')).toBe(a.gateway.split('.').slice(0, 3).join('.'));
      expect(ipB.split('.').slice(0, 3).join('.')).toBe(b.gateway.split('.').slice(0, 3).join('.'));

      // While running, there is something to clean up: the daemon, its dnsmasq, the bridge.
      const running = a.leftovers().join('\n');
      expect(running).toContain(`process ${a.pid}`);
      expect(running).toMatch(/dnsmasq/);
      expect(running).toContain(`bridge ${a.bridge}`);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect(a.leftovers()).toEqual([]);
    expect(b.leftovers()).toEqual([]);
    expect(existsSync(a.dir)).toBe(false);
  }, 180_000);
});
