import { KeyObject } from 'node:crypto';
import { readClientToken } from '../../lib/choria/clientToken';
import { ed25519PrivateKeyFromSeed, ed25519Sign } from '../../lib/choria/ed25519Keys';
import { SiteFiles } from '../../lib/siteFiles';

/** The `choria` provider's token and seed, as read now: what the broker login and v2 requests use. */
export interface RereadLogin {
  /** The client JWT as the file holds it now. */
  readonly jwt: string;
  /** Same as {@link jwt}: the name a v2 request's security wants. */
  readonly callerJwt: string;
  /** Signs with the seed the file holds now. */
  sign(bytes: Buffer): Uint8Array;
}

/** Options for {@link rereadLogin}. */
export interface RereadLoginOptions {
  files: SiteFiles;
  tokenFile: string;
  seedFile: string;
  /** What was read at start (so a file that is unreadable later still has a value). */
  token: string;
  seed: KeyObject;
  /** How long a reading is used before the files are read again. Default 1 s. */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * The token and seed read again from their files, as go-choria reads them for every connection and
 * request (`choria/connection.go`, the `choria` security provider): a renewed token is sent at the
 * next CONNECT and in the next v2 request. Readings are kept for `maxAgeMs`, so a busy daemon does
 * not read the files for every request. A file that cannot be read or parsed later keeps the last
 * good value (the credential watch logs the problem); the start-up check already refused a bad one.
 */
export function rereadLogin(options: RereadLoginOptions): RereadLogin {
  const { files, tokenFile, seedFile, maxAgeMs = 1000, now = Date.now } = options;
  let token = options.token;
  let seed = options.seed;
  let readAt = now();
  const refresh = (): void => {
    if (now() - readAt < maxAgeMs) return;
    readAt = now();
    try {
      const text = files.read(tokenFile).toString('utf8').trim();
      readClientToken(text);
      token = text;
    } catch {
      // The last good token.
    }
    try {
      seed = ed25519PrivateKeyFromSeed(Buffer.from(files.read(seedFile).toString('utf8').trim(), 'hex'));
    } catch {
      // The last good seed.
    }
  };
  return {
    get jwt() {
      refresh();
      return token;
    },
    get callerJwt() {
      refresh();
      return token;
    },
    sign(bytes) {
      refresh();
      return ed25519Sign(seed, bytes);
    },
  };
}
