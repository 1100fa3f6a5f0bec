import { redactUrlCredentials } from '../lib/redact';

/** The flags of upstream's `run`, its default command: given without a command, they mean `run`. */
const RUN_FLAGS = ['--config', '--choria-config', '--pid'];

/**
 * What to say when the command line is upstream's default command without its name
 * (`choria-provisioner --config x.yaml` runs `run` there): `did you mean: rxfleet run --config x.yaml`,
 * or `undefined` when a command is named or no flag of `run` is given. rxfleet does not start a
 * daemon from a command line that names no command; the line says what to type instead.
 */
export function didYouMeanRun(args: string[], commands: string[]): string | undefined {
  const words = args.filter((a) => !a.startsWith('-'));
  if (words.some((w) => commands.includes(w))) return undefined;
  if (!args.some((a) => RUN_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)))) return undefined;
  const global = args.filter((a) => a === '--debug');
  const rest = args.filter((a) => a !== '--debug');
  return redactUrlCredentials(
    `error: no command given (upstream's default command is run): did you mean: rxfleet ${[...global, 'run', ...rest].join(' ')}`,
  );
}
