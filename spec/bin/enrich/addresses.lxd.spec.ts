import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { EnricherSettings, defaultEnricherSettings, parseEnricherConfig } from '../../../lib/enricher/config/config';
import { EnrichDaemon, startEnrichDaemon } from '../../../bin/enrich/daemon';
import { EventPayload } from '../../../lib/enricher/output/payload';
import { DAEMON_KINDS, useTestDaemon, uniqueName } from '../../helpers/testDaemon';
import { useNatsServer } from '../../helpers/nats';
import { NatsRecorder, payloadProblems } from './daemonRig';

// `rxfleet enrich` in-process against a real LXD 5.0 daemon and nats-server: an IPv6-only
// instance, and an instance filter on a label. The address timeout is set far beyond every wait
// here, so a read that waited for an IPv4 an IPv6-only instance never gets would show as an event
// that never came. Waits are generous and assert what happened, never how long it took.

const WAIT = 60_000;

/** A unique-local /64 for a test bridge, gateway with prefix, written as Linux prints it (no leading zeros). */
const freshUla = (): string => {
  const group = (): string => (0x1000 + (randomBytes(2).readUInt16BE(0) % 0xefff)).toString(16);
  return `fd${randomBytes(1).toString('hex')}:${group()}:${group()}:${group()}::1/64`;
};

describe.each(DAEMON_KINDS)('rxfleet enrich against a real %s daemon: addresses and the instance filter', (kind) => {
  const host = useTestDaemon(kind);
  const nats = useNatsServer({ jetstream: false });
  let dir: string;
  let settings: EnricherSettings;
  let daemon: EnrichDaemon;
  let recorder: NatsRecorder;
  const served = { 'user.rxfleet': '1' };

  const about = (action: string, name: string) => (p: EventPayload) => p.action === action && p.name === name;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-v6-'));
    recorder = await NatsRecorder.start(nats().url);
    settings = defaultEnricherSettings({
      incus: { url: host().socket },
      http: undefined,
      storeFile: undefined,
      ipTimeout: 300_000,
      instances: parseEnricherConfig({ instances: 'user.rxfleet=1' }).settings.instances,
      outputs: { stdout: false, nats: { servers: [nats().url], subjectPrefix: 'incus.events', name: 'spec', maxHeld: 1000 } },
    });
    daemon = await startEnrichDaemon(settings, { registry: new Registry() });
  }, WAIT);

  afterAll(async () => {
    await daemon?.stop();
    await recorder?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, WAIT);

  it(
    "sends an IPv6-only instance's start (a bridge with ipv4.address=none, addressed by SLAAC) with its global IPv6, and holds nothing behind it",
    async () => {
      const healthy = uniqueName('h4');
      await host().launch(healthy, { config: served });
      await recorder.next(
        (p) => p.name === healthy && p.instance?.interfaces.some((i) => i.ipv4.length > 0) === true,
        `${healthy} with its IPv4`,
      );

      const net = uniqueName('rx6');
      const gateway = freshUla();
      await host().createNetwork(net, { 'ipv4.address': 'none', 'ipv6.address': gateway, 'ipv6.nat': 'false', 'ipv6.firewall': 'false' });
      const name = uniqueName('v6');
      await host().cli('init', host().image, name, '-c', 'user.rxfleet=1');
      await host().cli('config', 'device', 'add', name, 'eth0', 'nic', `network=${net}`, 'name=eth0');
      const from = recorder.messages.length;
      await host().cli('start', name);
      // An event behind the start: it goes out only once the start has.
      await host().setInstanceConfig(healthy, 'user.after', 'v6');

      const started = await recorder.next(about('instance-started', name), `instance-started ${name}`, from, WAIT);
      const eth0 = started.payload.instance?.interfaces.find((i) => i.network === net);
      expect(eth0?.ipv4).toEqual([]);
      expect(eth0?.ipv6.length).toBeGreaterThan(0);
      expect(eth0?.ipv6.every((address) => address.startsWith(gateway.slice(0, gateway.indexOf('::'))))).toBe(true);
      expect(started.payload.instance?.networks[`default/${net}`]).toMatchObject({ ipv4: '', ipv6: gateway });
      await recorder.next(
        (p) => p.name === healthy && p.instance?.config['user.after'] === 'v6',
        `${healthy}'s update behind the start`,
        from,
        WAIT,
      );
      expect(payloadProblems(started.payload)).toEqual([]);
    },
    3 * WAIT,
  );

  it(
    'sends only what the filter serves: an unlabelled instance says nothing; one that loses its label leaves once, bare, and says nothing after (its stop)',
    async () => {
      const [kept, other, marker] = [uniqueName('fk'), uniqueName('fo'), uniqueName('fm')];
      await host().launch(marker, { config: served });
      await host().launch(kept, { config: served });
      await recorder.next(about('instance-started', kept), `instance-started ${kept}`);
      const from = recorder.messages.length;

      await host().launch(other);
      await host().cli('config', 'unset', kept, 'user.rxfleet');
      // A stop is never collapsed and closes what debounce holds for the instance first.
      await host().stopInstance(kept);
      // The line is ordered: once the marker's change is out, whatever came before it has been decided.
      await host().setInstanceConfig(marker, 'user.mark', 'done');
      await recorder.next((p) => p.name === marker && p.instance?.config['user.mark'] === 'done', `${marker} marked`, from, WAIT);

      const seen = recorder.messages.slice(from).map((m) => m.payload);
      expect(seen.filter((p) => p.name === other)).toEqual([]);
      const left = seen.filter((p) => p.name === kept);
      expect(left.map((p) => [p.action, p.enriched.includes('instance')])).toEqual([['instance-updated', false]]);
    },
    3 * WAIT,
  );
});
