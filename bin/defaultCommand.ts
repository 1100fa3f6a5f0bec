/** The flags of upstream's `run`, its default command: given without a command, they mean `run`. */
const RUN_FLAGS = ['--config', '--choria-config', '--pid'];

/**
 * The command line with upstream's default command filled in: `choria-provisioner --config x.yaml`
 * runs `run` there (`Command("run", ...).Default()` in its `cmd/provisioner.go`), so a unit or a
 * script written for it that omits `run` runs the provisioner here too. When no command is named
 * and a flag of `run` is given, `run` goes after the program's own `--debug` (as
 * `choria-provisioner --debug run ...` reads) and before the rest; otherwise the arguments are
 * returned as they are (`--help`, `--version`, or no arguments, print what they print).
 */
export function withDefaultCommand(args: string[], commands: string[]): string[] {
  const words = args.filter((a) => !a.startsWith('-'));
  if (words.some((w) => commands.includes(w))) return args;
  if (!args.some((a) => RUN_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)))) return args;
  return [...args.filter((a) => a === '--debug'), 'run', ...args.filter((a) => a !== '--debug')];
}
