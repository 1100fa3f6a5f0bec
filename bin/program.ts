// Only commander and each command's options load here: a command's modules load when it runs, so
// --version, --help and the operator's commands start in little more than Node's own time.
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerDemo } from './commands/demo';
import { registerValidate } from './commands/validate';
import { registerSimulate } from './commands/simulate';
import { registerEnrich } from './commands/enrich';
import { registerEvents } from './commands/events';
import { registerProvision } from './commands/provision';
import { registerProvisionIncus } from './commands/provisionIncus';
import { registerStatus } from './commands/status';
import { redactUrlCredentials } from '../lib/redact';
import { withDefaultCommand } from './defaultCommand';

// Read at run time rather than imported, so the compiled bin does not carry its own copy.
const { version } = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string };

const program = new Command('rxfleet')
  .description('A reactive fleet-automation engine on RxJS 7')
  .version(version)
  // Upstream's command line is `choria-provisioner [--debug] run ...`: a --debug before the command
  // is the program's, one after it the command's own.
  .enablePositionalOptions()
  .option('--debug', 'log at debug level (as `choria-provisioner --debug run ...`)')
  .showHelpAfterError('(run with --help for usage)');

// One file per command under bin/commands/; each registers itself here.
registerDemo(program);
registerValidate(program);
registerSimulate(program);
registerEnrich(program);
registerEvents(program);
registerProvision(program);
registerProvisionIncus(program);
registerStatus(program);

const commands = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);

program.parseAsync(withDefaultCommand(process.argv.slice(2), commands), { from: 'user' }).catch((error: unknown) => {
  console.error(redactUrlCredentials(`rxfleet: ${error instanceof Error ? error.message : String(error)}`));
  process.exitCode = 1;
});
