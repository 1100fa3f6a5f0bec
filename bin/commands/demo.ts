import { Command } from 'commander';
import { runOperatorTour } from '../operatorTour';
import { positiveInt } from '../options';

/** `rxfleet demo`: the embedded default. */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the embedded default: for now, a tour of the operator kit on a simulated fleet, all in one process')
    .option('--nodes <n>', 'simulated nodes', positiveInt, 500)
    .option('--workers <n>', 'worker pool size', positiveInt, 16)
    .action(async (options: { nodes: number; workers: number }) => {
      const summary = await runOperatorTour({ nodes: options.nodes, workers: options.workers, out: process.stdout });
      process.exitCode = summary.provisioned === options.nodes ? 0 : 1;
    });
}
