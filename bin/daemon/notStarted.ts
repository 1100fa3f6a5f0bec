/**
 * Prints why a command did not start: each problem on its own line (`error: FILE: key: ...`,
 * `warning: ...`), then one summary line counting the errors, all on stderr, as `rxfleet validate`
 * prints them. Returns the exit code, 1.
 */
export function notStarted(command: string, lines: readonly string[]): number {
  const errors = lines.filter((line) => line.startsWith('error: ')).length;
  for (const line of lines) process.stderr.write(`${line}\n`);
  process.stderr.write(`rxfleet ${command}: not started: ${errors} configuration error${errors === 1 ? '' : 's'}\n`);
  return 1;
}
