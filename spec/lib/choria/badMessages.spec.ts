import pino from 'pino';
import { Registry } from 'prom-client';
import { Writable } from 'node:stream';
import { BAD_MESSAGES_METRIC, BadMessages } from '../../../lib/choria/badMessages';
import { VirtualTimeScheduler } from 'rxjs';
import { decodeRequest } from '../../../lib/choria/protocol/codec';

function capture(level = 'warn'): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({ write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()) });
  return {
    logger: pino({ level }, stream),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

describe('bad message accounting', () => {
  it('counts by source and reason, in memory and in the registry it is given, once per registry', async () => {
    const registry = new Registry();
    const a = new BadMessages({ registry });
    const b = new BadMessages({ registry });
    const refused = decodeRequest('nope');
    if (refused.ok) throw new Error('expected a refusal');
    a.report('reply', refused.error, 'provisioning.reply.x.y');
    a.report('reply', refused.error, 'provisioning.reply.x.z');
    b.report('lifecycle', refused.error, 'choria.lifecycle.event.startup.x');
    expect([a.count(), a.count('reply'), a.count('reply', 'not_json'), a.count('lifecycle'), b.count()]).toEqual([2, 2, 2, 0, 1]);
    const text = await registry.metrics();
    expect(text).toContain(`${BAD_MESSAGES_METRIC}{source="reply",reason="not_json"} 2`);
    expect(text).toContain(`${BAD_MESSAGES_METRIC}{source="lifecycle",reason="not_json"} 1`);
  });

  it('logs each one once, at warn, with subject and reason but never the message body', () => {
    const { logger, lines } = capture();
    const bad = new BadMessages({ logger });
    const refused = decodeRequest('{"token":"s3cret-value", oops}');
    if (refused.ok) throw new Error('expected a refusal');
    bad.report('request', refused.error, 'provisioning.node.n1');
    const logged = lines();
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      level: 40,
      source: 'request',
      subject: 'provisioning.node.n1',
      reason: 'not_json',
      layer: 'transport',
    });
    expect(JSON.stringify(logged[0])).not.toContain('s3cret-value');
  });

  it('tells onReport about each one, with its source, so a daemon can count it on its own metric', () => {
    const seen: string[] = [];
    const bad = new BadMessages({ onReport: (source, error, subject) => seen.push(`${source} ${error.reason} ${subject}`) });
    const refused = decodeRequest('nope');
    if (refused.ok) throw new Error('expected a refusal');
    bad.report('broadcast_reply', refused.error, 'provisioning.reply.x.1');
    bad.report('reply', refused.error, 'provisioning.reply.x.2');
    expect(seen).toEqual(['broadcast_reply not_json provisioning.reply.x.1', 'reply not_json provisioning.reply.x.2']);
    expect([bad.count('broadcast_reply'), bad.count('reply')]).toEqual([1, 1]);
  });

  it('counts a flood of 5,000 in full but logs the first five and one summary a minute (issue 14 item 6)', () => {
    const { logger, lines } = capture('info');
    const scheduler = new VirtualTimeScheduler();
    const registry = new Registry();
    const bad = new BadMessages({ logger, registry, scheduler });
    const refused = decodeRequest('nope');
    if (refused.ok) throw new Error('expected a refusal');
    for (let i = 0; i < 5000; i++) bad.report('lifecycle', refused.error, `choria.lifecycle.event.startup.${i}`);
    for (let i = 0; i < 5000; i++)
      bad.report('reply', { reason: 'unsolicited', layer: 'inbox', message: 'no waiting request' }, `provisioning.reply.x.${i}`);
    scheduler.flush();
    expect(bad.count('lifecycle')).toBe(5000);
    expect(bad.count('reply', 'unsolicited')).toBe(5000);
    const logged = lines();
    expect(logged.filter((l) => l.source === 'lifecycle')).toHaveLength(6);
    expect(logged.filter((l) => l.source === 'reply')).toHaveLength(6);
    expect(logged.find((l) => l.source === 'lifecycle' && l.suppressed === 4995)?.msg).toMatch(/^4995 more like this in the last 60 s/);
    // A reply nobody waits for is normal after a timeout: info, not warn.
    expect(logged.filter((l) => l.reason === 'unsolicited').every((l) => l.level === 30)).toBe(true);
    return registry.metrics().then((text) => expect(text).toContain(`${BAD_MESSAGES_METRIC}{source="reply",reason="unsolicited"} 5000`));
  });
});
