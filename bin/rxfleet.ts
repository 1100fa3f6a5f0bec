#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runOperatorTour } from './operatorTour';

// Read at run time rather than imported, so the compiled bin does not carry its own copy.
const { version } = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string };

/** Parses a positive whole number option, refusing anything else with one clear line. */
function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive whole number, got "${value}"`);
  return n;
}

const program = new Command('rxfleet')
  .description('A reactive fleet-automation engine on RxJS 7')
  .version(version)
  .showHelpAfterError('(run with --help for usage)');

program
  .command('demo')
  .description('the embedded default: for now, a tour of the operator kit on a simulated fleet, all in one process')
  .option('--nodes <n>', 'simulated nodes', positiveInt, 500)
  .option('--workers <n>', 'worker pool size', positiveInt, 16)
  .action(async (options: { nodes: number; workers: number }) => {
    const summary = await runOperatorTour({ nodes: options.nodes, workers: options.workers, out: process.stdout });
    process.exitCode = summary.provisioned === options.nodes ? 0 : 1;
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  console.error(`rxfleet: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
