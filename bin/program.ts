// Only commander and each command's options load here: a command's modules load when it runs, so
// --version, --help and the operator's commands start in little more than Node's own time.
import { registerDemo } from './commands/demo';
import { registerValidate } from './commands/validate';
import { registerSimulate } from './commands/simulate';
import { registerEnrich } from './commands/enrich';
import { registerEvents } from './commands/events';
import { registerProvision } from './commands/provision';
import { registerProvisionIncus } from './commands/provisionIncus';
import { registerStatus } from './commands/status';
import { withDefaultCommand } from './defaultCommand';
import { rootProgram, runProgram } from './rootProgram';

const program = rootProgram();

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

runProgram(program, withDefaultCommand(process.argv.slice(2), commands));
