import { Command, Option } from 'commander';
import { LogFlags, addLogOptions, durationOption, logSettings, positiveInt } from '../options';
import type { DemoSummary } from '../demoRun';
import { definedFields } from '../../lib/definedFields';

/** What commander parses for `rxfleet demo`. */
interface DemoFlags extends LogFlags {
  nodes: number;
  workers: number;
  bootTime: number;
  transport: 'auto' | 'nats' | 'memory';
  timeout: number;
  helperMode: 'persistent' | 'per-node';
  activeActive?: boolean;
  cluster?: boolean;
  incus?: boolean;
  incusDaemon?: 'incus' | 'lxd';
  instances: number;
}

/**
 * `rxfleet demo`: the embedded default. The first SIGINT or SIGTERM ends it early: what it started
 * is stopped (the provisioners, the fleet, the private nats-server and its directory, and with
 * `--incus` the private Incus or LXD daemon with its instances, bridge and directory), the summary so
 * far is printed, and it exits 1; a second signal exits at once, still leaving nothing behind.
 * `--incus` runs on Incus when it can run here, else on LXD (`--incus-daemon` chooses); where the
 * daemon cannot start (not root, not installed) it says why in one line and exits 1.
 */
export function registerDemo(program: Command): void {
  const command = program
    .command('demo')
    .description(
      'the embedded default: a private nats-server, a simulated Choria fleet, two provisioners electing a leader (or sharing the fleet with --active-active), a sample helper; a progress bar, then a summary',
    )
    .option('--nodes <n>', 'simulated nodes', positiveInt, 500)
    .option('--workers <n>', 'workers per provisioner', positiveInt, 16)
    .addOption(durationOption('--boot-time <duration>', 'the fleet boots over this long (0: all at once)', 3000))
    .addOption(
      new Option('--transport <kind>', 'nats: a private nats-server; memory: in-process; auto: nats when nats-server is on PATH')
        .choices(['auto', 'nats', 'memory'])
        .default('auto'),
    )
    .addOption(durationOption('--timeout <duration>', 'give up after this long', 600_000, '10m'))
    .addOption(
      new Option(
        '--helper-mode <mode>',
        'persistent: long-running sample helper processes; per-node: a helper process per node, as upstream',
      )
        .choices(['persistent', 'per-node'])
        .default('persistent'),
    )
    .option(
      '--cluster',
      'run on a private three-server nats-server cluster, the buckets replicated on all three, the parts spread across the servers',
    )
    .option('--active-active', 'the two provisioners share the fleet through claims in a KV bucket instead of electing a leader')
    .option(
      '--incus',
      'instead: the provisioner and the Incus enricher in one process (provision-incus) on a private Incus daemon (LXD when Incus is not installed), provisioning the nodes of instances as they come up (needs root, and incus or lxd)',
    )
    .addOption(
      new Option('--incus-daemon <kind>', 'with --incus: the daemon to start (default: incus when installed, else lxd)').choices([
        'incus',
        'lxd',
      ]),
    )
    .option('--instances <n>', 'with --incus: instances to launch', positiveInt, 3);
  addLogOptions(command, { defaultLevel: 'silent', stream: 'stderr' }).action(async (flags: DemoFlags) => {
    // Loaded when the command runs, so --help and other commands do not pay for NATS and the fleet.
    const { runDemo } = await import('../demoRun.js');
    const { handleShutdownSignals } = await import('../daemon/shutdownSignals.js');
    const { createLogger } = await import('../../streams/logOutput.js');
    const { level, format } = logSettings(flags, 'silent');
    const logger = createLogger({ level, ...definedFields({ format }), destination: 'stderr', name: 'rxfleet-demo' });
    const interrupt = new AbortController();
    let running: Promise<unknown> | undefined;
    const removeSignals = handleShutdownSignals({
      logger,
      graceMs: 15_000,
      graceful: async () => {
        interrupt.abort();
        await running?.catch(() => undefined);
      },
      // 0: the demo has stopped everything and returns below with its own exit code.
      exit: (code) => (code === 0 ? undefined : process.exit(code)),
    });
    try {
      if (flags.incus === true) {
        const { runIncusDemo } = await import('../demoIncus.js');
        const incus = runIncusDemo({
          instances: flags.instances,
          ...definedFields({ daemon: flags.incusDaemon }),
          transport: flags.transport,
          timeoutMs: flags.timeout,
          logger,
          out: process.stdout,
          err: process.stderr,
          signal: interrupt.signal,
        });
        running = incus;
        const summary = await incus;
        process.exitCode = summary.unavailable === undefined && summary.provisioned === summary.instances ? 0 : 1;
        return;
      }
      const demo: Promise<DemoSummary> = runDemo({
        nodes: flags.nodes,
        workers: flags.workers,
        bootMs: flags.bootTime,
        transport: flags.cluster === true ? 'cluster' : flags.transport,
        timeoutMs: flags.timeout,
        helperMode: flags.helperMode,
        activeActive: flags.activeActive === true,
        logger,
        out: process.stdout,
        signal: interrupt.signal,
      });
      running = demo;
      const summary = await demo;
      process.exitCode = summary.provisioned === summary.nodes ? 0 : 1;
    } finally {
      removeSignals();
    }
  });
}
