/**
 * Secrets that travel inside ordinary text: a URL's user information (`nats://admin:PASS@host`,
 * `https://token@host`). Fields named like a secret are redacted by the logger's paths; these can
 * sit in any string (a server list, an error message, a value echoed in a problem line), so every
 * line a command prints or logs passes through {@link redactUrlCredentials} on its way out.
 */

// scheme://userinfo@ : the user information is whatever sits between `//` and the first `@`
// before any `/`, space or quote. JSON text stays JSON: nothing that needs escaping is written.
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@"'<>]+@/gi;

/** The marker put where a secret was. */
export const REDACTED = '[redacted]';

/** `text` with the user information of every URL in it replaced by `[redacted]`. */
export function redactUrlCredentials(text: string): string {
  return text.includes('@') ? text.replace(URL_CREDENTIALS, `$1${REDACTED}@`) : text;
}

/**
 * A server address as it may be shown: {@link redactUrlCredentials}, and the user information of
 * an address written without a scheme too (`user:secret@host:4222` becomes `[redacted]@host:4222`).
 */
export function withoutCredentials(address: string): string {
  return redactUrlCredentials(address).replace(/^(?![a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, `${REDACTED}@`);
}
