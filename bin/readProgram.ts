// The program with only `status` and `history`, the operator's reads of the fleet, for a bundle of
// its own (scripts/package/bundle.ts): the launchers run it for those commands (READ_COMMANDS), so
// they read, and V8 loads, a fifth of the whole CLI. Every other command line, their --help too,
// runs bin/program.ts.
import { registerStatus } from './commands/status';
import { rootProgram, runProgram } from './rootProgram';

const program = rootProgram();
registerStatus(program);
runProgram(program, process.argv.slice(2));
