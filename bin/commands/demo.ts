import { Command, Option } from 'commander';
import { nonNegativeInt, positiveInt } from '../options';
import type { DemoOptions } from '../demoRun';

/** `rxfleet demo`: the embedded default. */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the embedded default: a private nats-server, a simulated Choria fleet, two provisioners electing a leader (or sharing the fleet with --active-active), a sample helper; a progress bar, then a summary')
    .option('--nodes <n>', 'simulated nodes', positiveInt, 500)
    .option('--workers <n>', 'workers per provisioner', positiveInt, 16)
    .option('--boot-seconds <s>', 'the fleet boots over this many seconds (0: all at once)', nonNegativeInt, 3)
    .addOption(new Option('--transport <kind>', 'nats: a private nats-server; memory: in-process; auto: nats when nats-server is on PATH').choices(['auto', 'nats', 'memory']).default('auto'))
    .option('--timeout <s>', 'give up after this many seconds', positiveInt, 600)
    .addOption(new Option('--helper-mode <mode>', 'persistent: long-running sample helper processes; per-node: a helper process per node, as upstream').choices(['persistent', 'per-node']).default('persistent'))
    .option('--active-active', 'the two provisioners share the fleet through claims in a KV bucket instead of electing a leader', false)
    .addOption(new Option('--log-level <level>', 'provisioner logs, to stderr').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('silent'))
    .action(async (options: Omit<DemoOptions, 'out'>) => {
      // Loaded when the command runs, so --help and other commands do not pay for NATS and the fleet.
      const { runDemo } = await import('../demoRun.js');
      const summary = await runDemo({ ...options, out: process.stdout });
      process.exitCode = summary.provisioned === summary.nodes ? 0 : 1;
    });
}
