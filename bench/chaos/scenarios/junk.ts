import { encodeReply } from '../../../lib/choria/protocol/codec';
import { encodeAgentReply } from '../../../lib/choria/protocol/mcorpc';
import { callerIdFor, newRequestId, replyPrefix } from '../../../lib/choria/protocol/subjects';
import { openNatsConnection } from '../../../streams/natsConnection';
import { now } from '../parts/processes';
import { startProvisionRig } from '../parts/provisionRig';
import { Scenario, ScenarioEnv } from './scenario';

const MALFORMED_SOURCES = ['lifecycle_event', 'discovery_reply', 'rpc_reply'];

/** Junk answers a broken or hostile node in provisioning mode can publish to a request's inbox. */
function junkReply(n: number, inbox: string): string {
  const requestId = inbox.slice(inbox.lastIndexOf('.') + 1);
  switch (n % 4) {
    case 0:
      return 'this is not a Choria reply';
    case 1:
      return '{"protocol":"choria:transport:1","data":"!!not base64!!","headers":{"mc_sender":"x"}}';
    case 2:
      // Well formed, but from another node than the one asked.
      return encodeReply(
        {
          requestId,
          senderId: 'intruder.example.net',
          agent: 'rpcutil',
          time: Date.now(),
          payload: encodeAgentReply({ statuscode: 0, statusmsg: 'OK', data: {} }),
        },
        'v1',
      );
    default:
      return encodeReply(
        { requestId: newRequestId(), senderId: 'intruder.example.net', agent: 'rpcutil', time: Date.now(), payload: '{}' },
        'v1',
      );
  }
}

async function run(env: ScenarioEnv, withJunk: boolean): Promise<Record<string, unknown>> {
  const nodes = env.number('NODES', 300);
  const rate = env.number('JUNK_RATE', 200);
  const perRequest = env.number('JUNK_PER_REQUEST', 4);
  const rig = await startProvisionRig({ nodes });
  const hostile = await openNatsConnection({ servers: [rig.server.url], name: 'chaos-hostile-node' });
  let junk = 0;
  let timer: NodeJS.Timeout | undefined;
  try {
    if (withJunk) {
      // Every request is answered first with junk, of each kind by default, by a node that hears them all.
      hostile.nc.subscribe('provisioning.node.>', {
        callback: (_e, msg) => {
          if (msg.reply === undefined) return;
          for (let i = 0; i < perRequest; i++) hostile.nc.publish(msg.reply, junkReply(junk++, msg.reply));
        },
      });
      // And at a steady rate: junk startup events, and replies to request ids nobody waits for.
      const unsolicited = replyPrefix('provisioning', callerIdFor('chaos-provisioner.example.net'));
      timer = setInterval(() => {
        for (let i = 0; i < rate / 10; i++) {
          hostile.nc.publish(
            'choria.lifecycle.event.startup.provision_mode_server',
            i % 2 === 0 ? '{"protocol":"io.choria.lifecycle.v1.startup","identity":' : 'junk',
          );
          hostile.nc.publish(`${unsolicited}.${newRequestId()}`, 'late or foreign');
          junk += 2;
        }
      }, 100);
      await hostile.nc.flush();
    }
    const started = now();
    await rig.startDaemon();
    // Junk sent before the daemon subscribed reached nobody: only what follows can be counted.
    const junkBeforeReady = junk;
    const finished = await rig.waitAllProvisioned(env.number('RUN_TIMEOUT_MS', 240_000));
    const seconds = (now() - started) / 1000;
    clearInterval(timer);
    let counted = 0;
    for (const source of MALFORMED_SOURCES) counted += await rig.metric('choria_provisioner_malformed_input_total', { source });
    for (const reason of ['unsolicited', 'stranger'])
      counted += await rig.metric('choria_provisioner_unexpected_replies_total', { reason });
    const failed = await rig.metric('choria_provisioner_provision_errors');
    const peak = rig.peakRss();
    const logLines = rig.daemon().lines.length;
    const summary = await rig.finish();
    return {
      nodes,
      finished,
      seconds,
      provisioned: summary.provisioned,
      duplicates: summary.duplicates,
      failed_cycles: failed,
      junk_sent: junk,
      junk_sent_while_ready: junk - junkBeforeReady,
      junk_counted: counted,
      daemon_log_lines: logLines,
      peak_rss_mib: peak,
    };
  } finally {
    clearInterval(timer);
    await hostile.drain().catch(() => undefined);
    await rig.finish().catch(() => undefined);
  }
}

/**
 * NODES (default 300) nodes provisioned twice: once on a clean broker, once while a hostile node
 * answers every request first with JUNK_PER_REQUEST (default 4, one of each kind) junk replies
 * (malformed, foreign, mismatched) and publishes junk startup events and unsolicited replies at
 * JUNK_RATE (default 200) a second each. Goals: every node provisioned, junk costing under 10% of
 * the run's time and under 20 MiB of peak memory, every junk message counted, and the log staying
 * small.
 */
export const junkInput: Scenario = {
  name: 'junk',
  description: 'junk replies and junk lifecycle events at a set rate during a run',
  async run(env) {
    const clean = await run(env, false);
    const dirty = await run(env, true);
    const ratio = Number(dirty.seconds) / Number(clean.seconds);
    return {
      baseline: clean,
      with_junk: dirty,
      time_ratio: Math.round(ratio * 100) / 100,
      goals: {
        every_node_provisioned: dirty.provisioned === dirty.nodes && clean.provisioned === clean.nodes,
        junk_under_10_percent: ratio < 1.1,
        junk_under_20_mib: Number(dirty.peak_rss_mib) - Number(clean.peak_rss_mib) <= 20,
        junk_counted: Number(dirty.junk_counted) >= Number(dirty.junk_sent_while_ready) * 0.95,
        no_failed_cycles: dirty.failed_cycles === 0,
      },
    };
  },
};
