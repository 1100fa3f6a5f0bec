import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where go-choria finds facter (`AIOCmd`): Puppet's AIO path first, then `PATH`; `undefined` when it is not there. */
export function facterCommand(env: Record<string, string | undefined> = process.env): string | undefined {
  const candidates = [
    '/opt/puppetlabs/bin/facter',
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter((d) => d !== '')
      .map((d) => join(d, 'facter')),
  ];
  return candidates.find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The host's domain as go-choria's `FacterDomain` reads it (`facter networking.domain`), or
 * `undefined` when facter is not installed, fails, or says nothing within `timeoutMs`. Never rejects.
 */
export function facterDomain(env: Record<string, string | undefined> = process.env, timeoutMs = 10_000): Promise<string | undefined> {
  const command = facterCommand(env);
  if (command === undefined) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    execFile(command, ['networking.domain'], { timeout: timeoutMs, env: env as NodeJS.ProcessEnv }, (error, stdout) => {
      const domain = String(stdout)
        .replace(/[\r\n]/g, '')
        .trim();
      resolve(error !== null || domain === '' ? undefined : domain);
    });
  });
}
