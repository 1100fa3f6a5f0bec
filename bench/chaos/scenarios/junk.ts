import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { callerIdFor, replyPrefix } from '../../../lib/choria/protocol/subjects';
import { JUNK_KINDS, JunkFlood, JunkKind, startJunkFlood } from '../parts/junkFlood';
import { cpuSeconds, now, onCleanUp, sleep } from '../parts/processes';
import { startProvisionRig } from '../parts/provisionRig';
import { startNatsServer } from '../../../streams/natsServerProcess';
import { Scenario, ScenarioEnv } from './scenario';

const MALFORMED_SOURCES = ['lifecycle_event', 'discovery_reply', 'rpc_reply'];
/** The rig's provisioner identity (its caller id names the reply prefix). */
const PROVISIONER = 'chaos-provisioner.example.net';

/** The kinds asked for in JUNK_KINDS (comma-separated), default all: one kind alone shows what it costs. */
function kindsAsked(): Set<JunkKind> {
  const asked = (process.env.JUNK_KINDS ?? '').split(',').filter((k) => k !== '');
  if (asked.length === 0) return new Set(JUNK_KINDS);
  const unknown = asked.filter((k) => !(JUNK_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new Error(`JUNK_KINDS: unknown ${unknown.join(', ')}; of ${JUNK_KINDS.join(', ')}`);
  return new Set(asked as JunkKind[]);
}

async function run(env: ScenarioEnv, withJunk: boolean): Promise<Record<string, unknown>> {
  const nodes = env.number('NODES', 300);
  const rig = await startProvisionRig({
    nodes,
    workers: env.number('WORKERS', 16),
    fleetArgs: ['--latency', `${env.number('LATENCY_MS', 100)}ms`, '--report-every', '50ms'],
  });
  let flood: JunkFlood | undefined;
  try {
    if (withJunk) flood = await startJunkFlood({ ...floodOptions(env, rig.server.url), kinds: kindsAsked() });
    const daemon = await rig.startDaemon();
    // The span measured: from the provisioner's ready to the fleet's last node provisioned, by the
    // fleet's own count. The flood starts at ready, as an outside client's would reach it.
    const ready = now();
    // What each process spent over the span: the junk's cost is CPU somewhere, and on a machine of
    // two cores CPU spent by the broker or the sender is CPU the fleet and the provisioner wait for.
    const pids = { provisioner: daemon.child.pid, fleet: rig.fleet.child.pid, broker: rig.server.pid };
    const cpuAt = (): Record<string, number | undefined> => ({
      ...Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)])),
      // This process: the hostile client (in the junk run) and the rig's bookkeeping.
      runner: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    });
    const cpuBefore = cpuAt();
    const flooding = flood?.flood();
    const done = await rig.provisionedAt(nodes, env.number('RUN_TIMEOUT_MS', 240_000));
    const cpuAfter = cpuAt();
    const seconds = done === undefined ? undefined : (done - ready) / 1000;
    const cpu = Object.fromEntries(
      Object.keys(cpuAfter)
        .filter((name) => cpuAfter[name] !== undefined && cpuBefore[name] !== undefined)
        .map((name) => [name, Math.round(((cpuAfter[name] as number) - (cpuBefore[name] as number)) * 100) / 100]),
    );
    await flooding;
    const countedNow = async (): Promise<number> => {
      let n = 0;
      for (const source of MALFORMED_SOURCES) n += await rig.metric('choria_provisioner_malformed_input_total', { source });
      for (const reason of ['unsolicited', 'stranger']) n += await rig.metric('choria_provisioner_unexpected_replies_total', { reason });
      return n;
    };
    // The last bursts may still be on their way through the daemon's socket: give it a moment.
    const soFar = flood?.sent();
    const sentInAll = soFar === undefined ? 0 : soFar.lifecycle + soFar.live + soFar.unsolicited + soFar.discovery;
    let counted = await countedNow();
    for (const until = now() + 5000; counted < sentInAll && now() < until; counted = await countedNow()) await sleep(100);
    const failed = await rig.metric('choria_provisioner_provision_errors');
    const peak = rig.peakRss();
    const logLines = rig.daemon().lines.length;
    // What the log said, line by kind: a flood must cost a few lines, and a failure shows here first.
    const said: Record<string, number> = {};
    for (const line of rig.daemon().lines) {
      const msg = String(line.msg ?? '').slice(0, 100);
      said[msg] = (said[msg] ?? 0) + 1;
    }
    const sent = flood?.sent();
    await flood?.stop();
    const summary = await rig.finish();
    return {
      nodes,
      provisioned: summary.provisioned,
      seconds: seconds === undefined ? undefined : Math.round(seconds * 100) / 100,
      cpu_seconds_during_run: cpu,
      duplicates: summary.duplicates,
      failed_cycles: failed,
      ...(sent !== undefined ? { junk_sent: sent, junk_counted: counted } : {}),
      daemon_log_lines: logLines,
      daemon_log: said,
      peak_rss_mib: peak,
    };
  } finally {
    await flood?.stop();
    await rig.finish().catch(() => undefined);
  }
}

/**
 * The same flood's startup events and unsolicited replies (the kinds that need no live request)
 * against a bare NATS client that does nothing with them (parts/natsClientFloor.ts), alone on a
 * broker: the CPU and peak memory any daemon on this client pays before its own code runs.
 */
async function floor(env: ScenarioEnv): Promise<Record<string, unknown>> {
  const server = await startNatsServer({ jetstream: false });
  const prefix = replyPrefix('provisioning', callerIdFor(PROVISIONER));
  const lifecycleSubject = 'choria.lifecycle.event.startup.provision_mode_server';
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, '../parts/natsClientFloor.ts'), server.url, lifecycleSubject, `${prefix}.*`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const removeCleanUp = onCleanUp(async () => {
    child.kill('SIGKILL');
    await exited;
    await server.stop();
  });
  const lines: Record<string, unknown>[] = [];
  let heard: (() => void) | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    heard?.();
  });
  const line = (): Promise<Record<string, unknown>> =>
    lines.length > 0
      ? Promise.resolve(lines.shift() as Record<string, unknown>)
      : new Promise((resolve) => (heard = () => resolve(lines.shift() as Record<string, unknown>)));
  let flood: JunkFlood | undefined;
  try {
    await line();
    flood = await startJunkFlood({ ...floodOptions(env, server.url), kinds: new Set<JunkKind>(['lifecycle', 'unsolicited']) });
    await flood.flood();
    // Time for the last bytes to arrive, as they would during a run.
    await new Promise((r) => setTimeout(r, 1000));
    const sent = flood.sent();
    child.kill('SIGTERM');
    const usage = await line();
    return {
      junk_sent: sent.lifecycle + sent.unsolicited,
      junk_bytes: sent.bytes,
      received: usage.messages,
      cpu_seconds: usage.cpu_seconds,
      peak_rss_growth_mib: Math.round((Number(usage.peak_rss_mib) - Number(usage.peak_rss_at_ready_mib)) * 10) / 10,
    };
  } finally {
    await flood?.stop();
    child.kill('SIGKILL');
    await exited;
    removeCleanUp();
    await server.stop();
  }
}

/** The flood's sizes and pace from the environment (the defaults are the issue's). */
function floodOptions(env: ScenarioEnv, url: string): Omit<Parameters<typeof startJunkFlood>[0], 'kinds'> {
  return {
    url,
    replyPrefix: replyPrefix('provisioning', callerIdFor(PROVISIONER)),
    lifecycleSubject: 'choria.lifecycle.event.startup.provision_mode_server',
    lifecycle: env.number('LIFECYCLE_JUNK', 5000),
    unsolicited: env.number('UNSOLICITED_JUNK', 4746),
    liveEvery: env.number('LIVE_JUNK_EVERY', 2),
    discovery: env.number('DISCOVERY_JUNK', 1),
    burst: env.number('JUNK_BURST', 100),
    burstGapMs: env.number('JUNK_BURST_MS', 20),
    sizes: { stringKiB: env.number('JUNK_STRING_KIB', 300), depth: env.number('JUNK_DEPTH', 150_000) },
  };
}

const ratio = (a: unknown, b: unknown): number => Math.round((Number(a) / Number(b)) * 100) / 100;

/**
 * The outside junk flood of issue 37, against a provisioner of WORKERS (16) workers and the sh
 * helper provisioning NODES (300) simulated nodes that answer after LATENCY_MS (100): run clean,
 * then while another NATS client sends, in this order, LIFECYCLE_JUNK (5,000) startup events in
 * bursts of JUNK_BURST (100) JUNK_BURST_MS (20) apart, a junk reply before the node's own on one
 * live request in LIVE_JUNK_EVERY (2), UNSOLICITED_JUNK (4,746) replies on the reply prefix for
 * request ids nobody waits for (same bursts), and DISCOVERY_JUNK (1) discovery reply. Each kind
 * cycles through five shapes (parts/junkMessages.ts): not JSON, not an object, missing fields,
 * wrong types, and oversized values of JUNK_STRING_KIB (300) KiB or arrays JUNK_DEPTH (150,000)
 * deep. JUNK_KINDS (`lifecycle,live,unsolicited,discovery`) sends some kinds only. Each run is
 * timed from the provisioner's ready to the fleet's last node provisioned, by the fleet's count.
 * Goals, printed beside each figure: at most 1.1x the clean time and 1.2x its peak RSS, nothing
 * lost, no failed cycle, every junk message counted.
 */
export const junkInput: Scenario = {
  name: 'junk',
  description: 'an outside junk flood (startup events, live and unsolicited replies, discovery) during a run',
  async run(env) {
    const load_average_before = loadavg().map((l) => Math.round(l * 100) / 100);
    const clean = await run(env, false);
    const dirty = await run(env, true);
    const clientFloor = await floor(env);
    const time = ratio(dirty.seconds, clean.seconds);
    const rss = ratio(dirty.peak_rss_mib, clean.peak_rss_mib);
    const sent = dirty.junk_sent as Record<string, number>;
    const junkSent = sent.lifecycle + sent.live + sent.unsolicited + sent.discovery;
    const lost = Number(dirty.nodes) - Number(dirty.provisioned);
    return {
      clean,
      with_junk: dirty,
      time_ratio: time,
      time_ratio_goal: '<= 1.1',
      peak_rss_ratio: rss,
      peak_rss_ratio_goal: '<= 1.2',
      nodes_lost: lost,
      nodes_lost_goal: 0,
      failed_cycles: dirty.failed_cycles,
      failed_cycles_goal: 0,
      junk_sent: junkSent,
      junk_counted: dirty.junk_counted,
      junk_counted_goal: `>= ${junkSent}`,
      peak_rss_growth_mib: Math.round((Number(dirty.peak_rss_mib) - Number(clean.peak_rss_mib)) * 10) / 10,
      nats_client_floor: clientFloor,
      load_average_before,
      load_average_after: loadavg().map((l) => Math.round(l * 100) / 100),
      goals: {
        time_within_1_1x: time <= 1.1,
        peak_rss_within_1_2x: rss <= 1.2,
        nothing_lost: lost === 0 && clean.provisioned === clean.nodes,
        no_failed_cycle: dirty.failed_cycles === 0 && clean.failed_cycles === 0,
        every_junk_message_counted: Number(dirty.junk_counted) >= junkSent,
      },
    };
  },
};
