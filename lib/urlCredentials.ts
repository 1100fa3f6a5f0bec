/**
 * A server address as it may be shown in a message: `nats://user:secret@host:4222` becomes
 * `nats://[redacted]@host:4222`, and so does `user:secret@host` without a scheme. Anything else is
 * returned as it is.
 */
export function withoutCredentials(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@\s]*@/i, (_m, scheme: string | undefined) => `${scheme ?? ''}[redacted]@`);
}
