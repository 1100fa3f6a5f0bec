import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { DurableWorld } from '../../helpers/durableWorld';
import { DAEMON_KINDS, useTestDaemon } from '../../helpers/testDaemon';
import { waitFor } from '../../helpers/waitFor';

// `rxfleet enrich` as a process with its JetStream output and state bucket, on a real Incus and a
// real LXD daemon and a real nats-server, while a consumer counts every event by its instance's
// sequence. In turn: the enricher is SIGKILLed and restarted, nats-server is SIGKILLed and
// restarted, the consumer is down for a while (30 s once: on Incus; the promise does not depend
// on the length, so LXD's is short), the Incus (LXD) daemon is restarted, and the active enricher
// of a pair is SIGKILLed. After each: no gap in any instance's sequence that the stream does not
// explain, nothing stored twice (each fault stays within the duplicate window, where the promise
// is that a repeat is dropped), the consumer's fleet as the server says, and the state bucket as
// the server says within one round (rounds run every hour here: the only round is the fast one a
// (re)connect starts). The same on a three-server cluster is spec/cluster/enrichJetStream.spec.ts.

const WAIT = 120_000;
jest.setTimeout(4 * WAIT);

describe.each(DAEMON_KINDS)('durable enriched events on a real %s daemon', (kind) => {
  const host = useTestDaemon(kind);
  let nats: NatsServerProcess;
  let admin: FleetConnection;
  let dir: string;
  let world: DurableWorld;

  /** Waits for the bucket and the consumer to agree with the server, then checks every sequence. */
  const expectEverythingAgrees = async (what: string): Promise<void> => {
    const converged = await world.converge(WAIT);
    expect({ what, ...converged, said: 'seconds' in converged ? [] : world.said() }).toEqual({
      what,
      seconds: expect.any(Number) as number,
      said: [],
    });
    const report = await world.consumer.report();
    expect({ what, gaps: report.gaps, duplicates: report.duplicates }).toEqual({ what, gaps: [], duplicates: [] });
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-durable-lxd-'));
    nats = await startNatsServer({ jetstream: true });
    admin = await openNatsConnection({ servers: [nats.url], name: 'spec-admin', reconnectWaitMs: 50 });
    world = new DurableWorld({ host: host(), natsUrls: [nats.url], admin, dir });
    await world.launch(2);
  }, WAIT);

  afterAll(async () => {
    await world?.stop();
    await admin?.drain();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, WAIT);

  it('the enricher SIGKILLed and restarted: the round says what changed, every sequence continues', async () => {
    const single = await world.startEnricher();
    world.consumer.start();
    await expectEverythingAgrees('the start');
    await world.change();
    await world.kill(single);
    await world.change();
    await world.startEnricher();
    await expectEverythingAgrees('a SIGKILL of the enricher');
  });

  it('nats-server SIGKILLed and restarted: what the enricher held goes once the server is back', async () => {
    await world.change();
    await nats.kill();
    await world.change();
    await nats.restart();
    await expectEverythingAgrees('a SIGKILL of nats-server');
  });

  it(`the consumer down for ${kind === 'incus' ? 30 : 2} s: it catches up from where it was, nothing missed`, async () => {
    world.consumer.stop();
    const downMs = kind === 'incus' ? 30_000 : 2000;
    const until = Date.now() + downMs;
    await world.change();
    while (Date.now() < until) await new Promise((r) => setTimeout(r, 500));
    await world.change();
    world.consumer.start();
    await expectEverythingAgrees(`the consumer down for ${downMs / 1000} s`);
  });

  it(`the ${kind === 'incus' ? 'Incus' : 'LXD'} daemon restarted: the reconnect's round brings the bucket back to what it says`, async () => {
    await host().restart();
    await world.change();
    await expectEverythingAgrees(`a restart of ${host().title}`);
  });

  it('the active enricher of a pair SIGKILLed: the standby takes over warm, and its round fills the gap', async () => {
    await world.stop();
    world.consumer.start();
    const a = await world.startEnricher('a');
    const b = await world.startEnricher('b');
    await waitFor(async () => (await world.role(a)) === 'active' || (await world.role(b)) === 'active', 'one of the pair to enrich', WAIT);
    const [active, standby] = (await world.role(a)) === 'active' ? [a, b] : [b, a];
    expect(await world.role(standby)).toBe('standby');
    await world.change();
    await expectEverythingAgrees('the pair starting');
    await world.kill(active);
    await world.change();
    await waitFor(async () => (await world.role(standby)) === 'active', 'the standby to take over', WAIT);
    await expectEverythingAgrees('a SIGKILL of the active enricher');
  });
});
