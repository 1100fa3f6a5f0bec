import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeIncus } from '../../../spec/helpers/FakeIncus';
import { sampleValue } from '../../../spec/helpers/provisioner';
import { RxfleetProcess } from '../../../spec/helpers/rxfleetProcess';
import { waitFor } from '../../../spec/helpers/waitFor';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { freePort, startNatsServer } from '../../../streams/natsServerProcess';
import { incusJunk, junkTextAt } from '../parts/junkMessages';
import { IncusStandIn, lifecycleFrame, startIncusStandIn } from '../parts/incusStandIn';
import { cpuSeconds, now, onCleanUp, peakRssMiB, resetPeakRss, rxfleet, sleep, stopProcess } from '../parts/processes';
import { Scenario, ScenarioEnv } from './scenario';

const name = (i: number): string => `c${i}`;

/** The world the benches' enricher reads (bench/enrich.ts): INSTANCES running instances on one bridge. */
function world(instances: number, latencyMs: number): FakeIncus {
  const fake = new FakeIncus({ latency: latencyMs });
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/16', 'ipv6.address': 'none' } });
  for (let i = 0; i < instances; i++)
    fake.createInstance('default', name(i), { network: 'br0' }).start('default', name(i), `10.0.${Math.floor(i / 250)}.${(i % 250) + 2}`);
  return fake;
}

async function run(env: ScenarioEnv, withJunk: boolean): Promise<Record<string, unknown>> {
  const instances = env.number('INSTANCES', 5000);
  const junkTotal = env.number('INCUS_JUNK', 10_000);
  const burst = env.number('JUNK_BURST', 100);
  const gapMs = env.number('JUNK_BURST_MS', 20);
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-chaos-enrich-junk-'));
  const fake = world(instances, env.number('LATENCY_MS', 1));
  const nats = await startNatsServer({ jetstream: false });
  let incus: IncusStandIn | undefined;
  let daemon: RxfleetProcess | undefined;
  let consumer: FleetConnection | undefined;
  const removeCleanUp = onCleanUp(async () => {
    await incus?.stop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    incus = await startIncusStandIn(fake.asPromiseReader(), join(dir, 'unix.socket'));
    consumer = await openNatsConnection({ servers: [nats.url], name: 'chaos-consumer' });
    let received = 0;
    let lastAt = now();
    let waiting: { count: number; resolve: (at: number) => void } | undefined;
    consumer.nc.subscribe('incus.events.>', {
      callback: () => {
        received++;
        lastAt = now();
        if (waiting !== undefined && received >= waiting.count) {
          const { resolve } = waiting;
          waiting = undefined;
          resolve(lastAt);
        }
      },
    });
    await consumer.nc.flush();
    const receivedAt = (count: number, timeoutMs: number): Promise<number | undefined> =>
      Promise.race([
        new Promise<number>((resolve) => (received >= count ? resolve(lastAt) : (waiting = { count, resolve }))),
        sleep(timeoutMs).then(() => undefined),
      ]);

    const port = await freePort();
    const config = join(dir, 'enrich.yaml');
    // Rounds far apart: after the first, only the burst's events are read.
    writeFileSync(config, ['sweep_interval: 1h', 'store_interval: 1s'].join('\n'));
    const started = rxfleet([
      'enrich',
      '--config',
      config,
      '--incus',
      incus.socket,
      '--nats',
      nats.url,
      '--monitor',
      `127.0.0.1:${port}`,
      '--data-dir',
      join(dir, 'data'),
    ]);
    daemon = started;
    await waitFor(
      async () => {
        if (!started.running()) throw new Error(`rxfleet enrich exited: ${started.stderr().slice(-500)}`);
        return (
          (await fetch(`http://127.0.0.1:${port}/ready`).then(
            (r) => r.status,
            () => 0,
          )) === 200
        );
      },
      'the enricher to be ready',
      60_000,
    );
    await incus.listening();
    // Warm: the first round announces every instance; then quiet.
    if ((await receivedAt(instances, 120_000)) === undefined) throw new Error(`the first round announced ${received} of ${instances}`);
    while (now() - lastAt < 500) await sleep(100);
    const warm = received;

    const metric = async (metricName: string, labels: Record<string, string>): Promise<number> =>
      sampleValue(
        await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (r) => r.text(),
          () => '',
        ),
        metricName,
        labels,
      );
    const pids = { enricher: started.child.pid };
    // The peak of the first round (every instance read and announced) is the same work in both
    // runs, and where its collections fall made the clean run's peak vary by 50 MiB: what is
    // compared is the peak over the burst, from the resident set it started with.
    const firstRoundPeak = peakRssMiB(pids.enricher);
    if (!resetPeakRss(pids.enricher)) throw new Error(`cannot reset the peak RSS of ${pids.enricher} (/proc/PID/clear_refs)`);
    const cpuBefore = { enricher: cpuSeconds(pids.enricher), runner: (process.cpuUsage().user + process.cpuUsage().system) / 1e6 };

    // The burst: one real change per instance, each announced by its event, all at once, as
    // bench:enrich sends them; the flood beside it, in bursts, from the same moment.
    const pool = incusJunk({ depth: env.number('INCUS_JUNK_DEPTH', 2000) });
    let junkSent = 0;
    const t0 = now();
    const flooding = (async () => {
      if (!withJunk) return;
      while (junkSent < junkTotal) {
        const end = Math.min(junkTotal, junkSent + burst);
        for (; junkSent < end; junkSent++) incus?.send(junkTextAt(pool, junkSent));
        await sleep(gapMs);
      }
    })();
    for (let i = 0; i < instances; i++) {
      fake.configure('default', name(i), { 'user.chaos': String(t0 + i) });
      incus.send(lifecycleFrame('instance-updated', name(i)));
    }
    const done = await receivedAt(warm + instances, env.number('RUN_TIMEOUT_MS', 120_000));
    const junkDuringBurst = junkSent;
    const cpu = {
      enricher: Math.round(((cpuSeconds(pids.enricher) ?? NaN) - (cpuBefore.enricher ?? NaN)) * 100) / 100,
      runner: Math.round(((process.cpuUsage().user + process.cpuUsage().system) / 1e6 - cpuBefore.runner) * 100) / 100,
    };
    await flooding;
    await incus.drained();
    // The last frames may still be on their way through the enricher: give it a moment.
    const frames = async (result: string): Promise<number> => metric('incus_events_frames_total', { result });
    for (const until = now() + 5000; (await frames('ignored')) + (await frames('malformed')) < junkSent && now() < until;) await sleep(100);
    // Until the flood was over and read: what the junk cost the enricher in all, burst or not.
    const cpuUntilQuiet = Math.round(((cpuSeconds(pids.enricher) ?? NaN) - (cpuBefore.enricher ?? NaN)) * 100) / 100;
    const figures = {
      instances,
      events_out: received - warm,
      seconds: done === undefined ? undefined : Math.round(((done - t0) / 1000) * 100) / 100,
      cpu_seconds_during_burst: cpu,
      enricher_cpu_seconds_until_quiet: cpuUntilQuiet,
      frames: { event: await frames('event'), ignored: await frames('ignored'), malformed: await frames('malformed') },
      sessions_opened: await metric('incus_events_connects_total', { result: 'opened' }),
      ...(withJunk ? { junk_sent: junkSent, junk_sent_during_burst: junkDuringBurst } : {}),
      peak_rss_first_round_mib: firstRoundPeak,
      peak_rss_mib: peakRssMiB(started.child.pid),
      daemon_log_lines: started.lines.length,
    };
    return figures;
  } finally {
    if (daemon !== undefined) await stopProcess(daemon, 30_000);
    await consumer?.drain().catch(() => undefined);
    removeCleanUp();
    await incus?.stop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const ratio = (a: unknown, b: unknown): number => Math.round((Number(a) / Number(b)) * 100) / 100;

/**
 * The enricher's side of issue 37: `rxfleet enrich` reading a stand-in Incus (parts/incusStandIn.ts:
 * the REST reads answered from the benches' FakeIncus world of INSTANCES (5,000: a burst long enough to hold the whole flood) instances, each
 * call taking LATENCY_MS (1), and the events websocket) and publishing to a private nats-server.
 * After the first round, a burst of one real `instance-updated` per instance (each a real change),
 * in the server's own frame shape, timed from its first frame to the last enriched event a NATS
 * consumer receives; run clean, then with INCUS_JUNK (10,000) junk frames on the same websocket
 * from the same moment, in bursts of JUNK_BURST (100) JUNK_BURST_MS (20) apart: invalid JSON, JSON
 * that is no object, unknown event types, lifecycle frames missing their metadata or its action,
 * and frames nested INCUS_JUNK_DEPTH (2,000) deep. Goals, printed beside each figure: at most 1.1x
 * the clean time and 1.2x its peak RSS, every event enriched, every junk frame counted, one session.
 */
export const enrichJunk: Scenario = {
  name: 'enrich-junk',
  description: 'a junk flood on the Incus events socket beside a burst of real events',
  async run(env) {
    const load_average_before = loadavg().map((l) => Math.round(l * 100) / 100);
    const clean = await run(env, false);
    const dirty = await run(env, true);
    const time = ratio(dirty.seconds, clean.seconds);
    const rss = ratio(dirty.peak_rss_mib, clean.peak_rss_mib);
    const frames = dirty.frames as { event: number; ignored: number; malformed: number };
    const counted = frames.ignored + frames.malformed;
    const junkSent = Number(dirty.junk_sent);
    return {
      clean,
      with_junk: dirty,
      time_ratio: time,
      time_ratio_goal: '<= 1.1',
      peak_rss_ratio: rss,
      peak_rss_ratio_goal: '<= 1.2',
      events_lost: Number(dirty.instances) - Number(dirty.events_out),
      events_lost_goal: 0,
      junk_counted: counted,
      junk_counted_goal: `>= ${junkSent}`,
      load_average_before,
      load_average_after: loadavg().map((l) => Math.round(l * 100) / 100),
      goals: {
        time_within_1_1x: time <= 1.1,
        peak_rss_within_1_2x: rss <= 1.2,
        every_event_enriched: dirty.events_out === dirty.instances && clean.events_out === clean.instances,
        every_junk_frame_counted: counted >= junkSent,
        one_session: dirty.sessions_opened === 1 && clean.sessions_opened === 1,
      },
    };
  },
};
