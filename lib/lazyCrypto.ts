import type * as Crypto from 'node:crypto';

let loaded: typeof Crypto | undefined;

/**
 * Node's crypto module, loaded at the first call rather than with the module that imports it:
 * the crypto module (and the streams it loads) costs a command that never hashes, such as
 * `rxfleet validate`, milliseconds of its start. Every call after the first returns the same module.
 */
export function lazyCrypto(): typeof Crypto {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a synchronous, deferred load of a built-in
  return (loaded ??= require('node:crypto') as typeof Crypto);
}
