import { DurableMessage, Flight, PublishLine } from '../../../../lib/enricher/jetstream/publishLine';
import { messageId, parseStateKey, stateKey, withInstanceSeq } from '../../../../lib/enricher/jetstream/eventIdentity';

// The JetStream output's line without a server: what is sent when, with which sequence and id,
// and what leaves once acknowledged.

function message(name: string, action = 'instance-updated', kind = 'instance', stamp = `${name}-${action}`): DurableMessage {
  return {
    subject: `incus.events.default.${kind}.${action}.${name}`,
    json: JSON.stringify({ action, name }),
    about: { kind, project: 'default', name, action, stamp },
    record: kind === 'instance',
  };
}

const names = (flights: Flight[]): string[] => flights.map((f) => `${f.message.about.name}#${f.seq ?? '-'}`);

function line(options: Partial<ConstructorParameters<typeof PublishLine>[0]> = {}): { line: PublishLine; dropped: () => number } {
  let dropped = 0;
  const l = new PublishLine({ maxHeld: 100, maxPending: 8, onDropped: () => dropped++, ...options });
  l.connected = true;
  return { line: l, dropped: () => dropped };
}

describe('PublishLine', () => {
  it('sends in order with a window; each instance event gets its next sequence and a message id named after it', () => {
    const { line: l } = line({ maxPending: 2, seqs: new Map([['default/c1', 4]]) });
    for (const name of ['c1', 'c2', 'c3']) l.add(message(name));
    const first = l.take();
    expect(names(first)).toEqual(['c1#5', 'c2#1']);
    expect(first[0].id).toBe('instance/default/c1/5');
    expect(JSON.parse(first[0].data)).toEqual({ action: 'instance-updated', name: 'c1', instance_seq: 5 });
    expect(l.take()).toEqual([]);
    expect(l.ack(first[1], first[1].attempt, 11, false)).toBe('acked');
    // Acknowledged, but not at the front: nothing leaves, nothing new fits.
    expect(l.release()).toEqual([]);
    expect(l.take()).toEqual([]);
    expect(l.ack(first[0], first[0].attempt, 10, false)).toBe('acked');
    expect(names(l.release())).toEqual(['c1#5', 'c2#1']);
    expect(names(l.take())).toEqual(['c3#1']);
    expect(l.held).toBe(1);
  });

  it("sends an instance's next event only once its previous one is acknowledged, holding what is behind it in order", () => {
    const { line: l } = line();
    l.add(message('c1', 'instance-started'));
    l.add(message('c1', 'instance-updated'));
    l.add(message('c2'));
    const [start] = l.take();
    expect(names([start])).toEqual(['c1#1']);
    l.ack(start, start.attempt, 1, false);
    expect(names(l.take())).toEqual(['c1#2', 'c2#1']);
  });

  it('sends a failed event again with the same sequence and id after the pause, before anything new; an answer to the old attempt is ignored', () => {
    const { line: l } = line();
    l.add(message('c1'));
    const [sent] = l.take();
    const attempt = sent.attempt;
    expect(l.fail(sent, attempt)).toBe(true);
    l.add(message('c2'));
    expect(l.take()).toEqual([]);
    l.retry();
    const again = l.take();
    expect(names(again)).toEqual(['c1#1', 'c2#1']);
    expect(again[0].id).toBe('instance/default/c1/1');
    expect(l.ack(sent, attempt, 5, false)).toBe('stale');
    expect(l.ack(sent, sent.attempt, 5, false)).toBe('acked');
  });

  it('a lost connection sends every unanswered event again when it is back, nothing while it is down', () => {
    const { line: l } = line();
    l.add(message('c1'));
    l.add(message('c2'));
    const sent = l.take();
    l.ack(sent[0], sent[0].attempt, 1, false);
    l.disconnected();
    expect(l.take()).toEqual([]);
    l.connected = true;
    expect(names(l.take())).toEqual(['c2#1']);
  });

  it('checks a duplicate: stored, it is acknowledged; not stored, it goes again under a new id, its sequence kept', () => {
    const { line: l } = line();
    l.add(message('c1'));
    l.add(message('c2'));
    const [a, b] = l.take();
    expect(l.ack(a, a.attempt, 7, true)).toBe('verify');
    l.verified(a, true);
    expect(a.state).toBe('acked');
    expect(l.ack(b, b.attempt, 0, true)).toBe('verify');
    l.verified(b, false);
    l.retry();
    const [again] = l.take();
    expect(again.id).toBe(messageId(b.message.about, 1, 1));
    expect(again.id).toBe('instance/default/c2/1~1');
    expect(again.seq).toBe(1);
  });

  it('bounds what waits: past maxHeld the oldest waiting is dropped, kept as its object’s last word until a later one supersedes it; nothing dropped had a sequence', () => {
    const { line: l, dropped } = line({ maxHeld: 2 });
    l.connected = false;
    l.add(message('c1', 'instance-started'));
    l.add(message('c2', 'instance-started'));
    l.add(message('c3', 'instance-started')); // c1's start becomes its last word
    l.add(message('c2', 'instance-stopped')); // c2's start is pushed out behind a later c2: dropped
    expect(dropped()).toBe(1);
    expect(l.held).toBe(3);
    l.add(message('c1', 'instance-stopped')); // supersedes c1's last word; pushes c3 out as its last word
    expect(dropped()).toBe(2);
    l.connected = true;
    const sent = l.take();
    expect(sent.map((f) => `${f.message.about.name} ${f.message.about.action}#${f.seq}`)).toEqual([
      'c3 instance-started#1',
      'c2 instance-stopped#1',
      'c1 instance-stopped#1',
    ]);
  });

  it('the floor is the highest acknowledged stream sequence when the oldest unreleased event was first sent', () => {
    const { line: l } = line({ streamSeq: 40 });
    expect(l.floor()).toBe(Infinity);
    l.add(message('c1'));
    const [a] = l.take();
    expect(l.floor()).toBe(40);
    l.ack(a, a.attempt, 41, false);
    l.add(message('c2'));
    const [b] = l.take();
    expect(l.floor()).toBe(40);
    l.release();
    expect(l.floor()).toBe(41);
    l.ack(b, b.attempt, 42, false);
    l.release();
    expect(l.floor()).toBe(Infinity);
  });

  it('names other events by subject, action and timestamp; abandons everything unacknowledged', () => {
    const { line: l, dropped } = line();
    l.add(message('br0', 'network-updated', 'network', '2026-12-01T10:00:00.1Z'));
    l.add(message('c1'));
    const [net, inst] = l.take();
    expect(net.seq).toBeUndefined();
    expect(net.id).toBe('network/default/br0/network-updated@2026-12-01T10:00:00.1Z');
    l.ack(inst, inst.attempt, 3, false);
    l.add(message('c2'));
    expect(l.abandon()).toEqual({ dropped: 2, acknowledged: 1 });
    expect(dropped()).toBe(0);
    expect(l.held).toBe(0);
  });
});

describe('state bucket keys', () => {
  it('are <project>.<name>, every other character escaped, and read back', () => {
    expect(stateKey('default', 'web1')).toBe('default.web1');
    expect(stateKey('my.proj', 'web_1')).toBe('my_2Eproj.web_5F1');
    expect(stateKey('été', 'x')).toBe('_C3_A9t_C3_A9.x');
    for (const [project, name] of [
      ['default', 'web1'],
      ['my.proj', 'web_1'],
      ['été', 'x'],
      ['a_b', 'c'],
    ])
      expect(parseStateKey(stateKey(project, name))).toEqual({ project, name });
    expect(parseStateKey('rxfleet')).toBeUndefined();
    expect(parseStateKey('a.b.c')).toBeUndefined();
    expect(parseStateKey('a_ZZ.b')).toBeUndefined();
  });

  it('instance_seq goes last into the payload', () => {
    expect(JSON.parse(withInstanceSeq('{"a":1}', 3))).toEqual({ a: 1, instance_seq: 3 });
  });
});
