import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redactUrlCredentials } from '../lib/redact';

/**
 * The `rxfleet` program without its commands: name, version, `--debug` and how it reads its
 * arguments, the same for every entry (bin/program.ts with every command, bin/readProgram.ts with
 * the operator's reads), so that a command answers alike from either.
 */
export function rootProgram(): Command {
  // Read at run time rather than imported, so the compiled bin does not carry its own copy.
  const { version } = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string };
  return (
    new Command('rxfleet')
      .description('A reactive fleet-automation engine on RxJS 7')
      .version(version)
      // Upstream's command line is `choria-provisioner [--debug] run ...`: a --debug before the command
      // is the program's, one after it the command's own.
      .enablePositionalOptions()
      .option('--debug', 'log at debug level (as `choria-provisioner --debug run ...`)')
      .showHelpAfterError('(run with --help for usage)')
  );
}

/** Runs `program` on `args`; a failure is one line on stderr (credentials in URLs redacted) and exit code 1. */
export function runProgram(program: Command, args: string[]): void {
  program.parseAsync(args, { from: 'user' }).catch((error: unknown) => {
    console.error(redactUrlCredentials(`rxfleet: ${error instanceof Error ? error.message : String(error)}`));
    process.exitCode = 1;
  });
}
