import { spawnSync } from 'node:child_process';
import { cleanUpOnExit } from '../../streams/exitCleanup';
import type { ClusterServer, NatsClusterProcess } from '../../streams/natsClusterProcess';

/** A cut made by {@link cutOff}. */
export interface Partition {
  /** The server cut off. */
  readonly server: ClusterServer;
  /** Removes the rules (the servers' explicit routes then dial each other again). Idempotent. */
  heal(): void;
}

function run(command: string, args: string[]): { ok: boolean; output: string } {
  const done = spawnSync(command, args, { encoding: 'utf8' });
  return { ok: done.status === 0, output: `${done.stdout ?? ''}${done.stderr ?? ''}`.trim() };
}

function iptables(args: string[]): void {
  const done = run('iptables', ['-w', ...args]);
  if (!done.ok) throw new Error(`iptables ${args.join(' ')}: ${done.output}`);
}

/** The local ports of `pid`'s established TCP connections to any of `ports`. */
function dialedFrom(pid: number, ports: number[]): number[] {
  const listing = run('ss', ['-tnpH', 'state', 'established']).output;
  const found: number[] = [];
  for (const line of listing.split('\n')) {
    if (!line.includes(`pid=${pid},`)) continue;
    const [local, peer] = line.trim().split(/\s+/).slice(2, 4);
    const peerPort = Number(peer?.split(':').pop());
    if (ports.includes(peerPort)) found.push(Number(local?.split(':').pop()));
  }
  return found;
}

/**
 * Cuts `server`'s routes from the rest of the cluster, as a network partition would, leaving every
 * client connection alone: in a chain of its own hooked into OUTPUT, whatever is sent to or from
 * its route port, and whatever it sends to the others' route ports (told apart by the group id the
 * partitionable cluster runs it under), is answered with a TCP reset. The route connections open
 * now are destroyed (`ss -K`), so both sides see the cut at once rather than at their next ping.
 * The rules are removed by `heal()`, and however this process ends.
 */
export function cutOff(cluster: NatsClusterProcess, server: ClusterServer): Partition {
  if (server.gid === undefined) throw new Error('the cluster was not started partitionable: its servers share a group id');
  const others = cluster.servers.filter((s) => s !== server).map((s) => s.clusterPort);
  const chain = `RXF-CUT-${process.pid}-${server.clusterPort}`.slice(0, 28);
  const reset = ['-j', 'REJECT', '--reject-with', 'tcp-reset'];
  iptables(['-N', chain]);
  let healed = false;
  const heal = (): void => {
    if (healed) return;
    healed = true;
    run('iptables', ['-w', '-D', 'OUTPUT', '-j', chain]);
    run('iptables', ['-w', '-F', chain]);
    run('iptables', ['-w', '-X', chain]);
  };
  const forget = cleanUpOnExit(heal);
  try {
    iptables(['-A', chain, '-p', 'tcp', '--dport', String(server.clusterPort), ...reset]);
    iptables(['-A', chain, '-p', 'tcp', '--sport', String(server.clusterPort), ...reset]);
    iptables([
      '-A',
      chain,
      '-p',
      'tcp',
      '-m',
      'owner',
      '--gid-owner',
      String(server.gid),
      '-m',
      'multiport',
      '--dports',
      others.join(','),
      ...reset,
    ]);
    iptables(['-I', 'OUTPUT', '-j', chain]);
    const ports = [server.clusterPort, ...dialedFrom(server.pid, others)];
    const filter = ports.map((p) => `sport = :${p} or dport = :${p}`).join(' or ');
    run('ss', ['-K', '-tn', `( ${filter} )`]);
  } catch (error) {
    heal();
    forget();
    throw error;
  }
  return {
    server,
    heal: () => {
      heal();
      forget();
    },
  };
}
