import { execFile } from 'node:child_process';
import { choriaBinary } from '../goPeers';

/** What a `choria` command printed. */
export interface ChoriaOutput {
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `choria` binary with `args` (a client command, a `jwt` tool) and resolves with
 * what it printed; rejects with its exit code and the end of its stderr when it fails.
 */
export function choria(args: string[], options: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<ChoriaOutput> {
  return new Promise((resolve, reject) => {
    execFile(
      choriaBinary(),
      args,
      { cwd: options.cwd, timeout: options.timeoutMs ?? 30_000, env: options.env ?? process.env, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null)
          reject(new Error(`choria ${args.slice(0, 2).join(' ')} failed (${error.code ?? error.signal}): ${stderr.slice(-800)}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}
