import { REDACTED, redactUrlCredentials, withoutCredentials } from '../../lib/redact';

describe('redactUrlCredentials', () => {
  it('removes the user information of every URL in a text, and leaves the rest as it was', () => {
    expect(redactUrlCredentials('tried nats://admin:PASS@a:4222 and tls://tok@b:4443, no luck')).toBe(
      `tried nats://${REDACTED}@a:4222 and tls://${REDACTED}@b:4443, no luck`,
    );
    expect(redactUrlCredentials('mail ops@example.net about nats://a:4222')).toBe('mail ops@example.net about nats://a:4222');
  });
});

describe('withoutCredentials: a server address as it may be shown', () => {
  it('hides the user information with a scheme or without one', () => {
    expect(withoutCredentials('nats://admin:PASS@a:4222')).toBe(`nats://${REDACTED}@a:4222`);
    expect(withoutCredentials('admin:PASS@a:4222')).toBe(`${REDACTED}@a:4222`);
    expect(withoutCredentials('a:4222')).toBe('a:4222');
    expect(withoutCredentials('nats://a:4222')).toBe('nats://a:4222');
  });
});
