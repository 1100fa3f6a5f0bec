import fc from 'fast-check';
import pino from 'pino';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { TestScheduler } from 'rxjs/testing';
import { IncusStreamItem } from '../../../lib/incus/api';
import { EventSocket, EventSocketHandlers, EventSocketOpener } from '../../../streams/incus/eventSocket';
import { eventsPath, incusEvents } from '../../../streams/incus/incusEvents';
import { newScheduler, tracking } from '../../helpers/marbles';

const STARTED =
  '{"type":"lifecycle","timestamp":"2026-11-29T10:11:26.343811125Z","metadata":{"action":"instance-started","source":"/1.0/instances/ev1","requestor":{"username":"root","protocol":"unix","address":"@"}},"location":"none","project":"default"}\n';
const OPERATION = '{"type":"operation","timestamp":"2026-11-29T10:11:26Z","metadata":{"id":"1"},"project":"default"}\n';

const started = {
  kind: 'event',
  event: {
    action: 'instance-started',
    project: 'default',
    name: 'ev1',
    source: '/1.0/instances/ev1',
    timestamp: '2026-11-29T10:11:26.343811125Z',
    location: 'none',
  },
};
const values: Record<string, IncusStreamItem> = {
  c: { kind: 'connected' },
  e: started as IncusStreamItem,
  m: { kind: 'malformed', reason: 'not JSON: garbage' },
  d: { kind: 'disconnected', reason: 'closed (1006)' },
  h: { kind: 'disconnected', reason: 'no frame, ping or pong for 30000 ms (half-open connection)' },
};

/** One websocket the stream opened: what it was told, and a way to play the server's part. */
class FakeSocket implements EventSocket {
  readonly pings: number[] = [];
  terminated = false;

  constructor(
    private readonly ts: TestScheduler,
    readonly handlers: EventSocketHandlers,
    readonly openedAt: number,
  ) {}

  ping(): void {
    this.pings.push(this.ts.now());
  }

  terminate(): void {
    this.terminated = true;
  }

  /** Plays `fn` on this socket `delay` ms from now (virtual). */
  at(delay: number, fn: (h: EventSocketHandlers) => void): void {
    this.ts.schedule(() => fn(this.handlers), delay);
  }
}

/** A fake server: each attempt gets the next script (the last one repeats). */
function fakeServer(ts: TestScheduler, scripts: Array<(socket: FakeSocket) => void>): { opener: EventSocketOpener; sockets: FakeSocket[] } {
  const sockets: FakeSocket[] = [];
  const opener: EventSocketOpener = (handlers) => {
    const socket = new FakeSocket(ts, handlers, ts.now());
    sockets.push(socket);
    scripts[Math.min(sockets.length - 1, scripts.length - 1)](socket);
    return socket;
  };
  return { opener, sockets };
}

const refuse = (s: FakeSocket): void => s.handlers.closed('connect ECONNREFUSED');
const hang = (): void => undefined;
const answerPings = (s: FakeSocket): void => {
  const ping = s.ping.bind(s);
  s.ping = () => {
    ping();
    s.at(1, (h) => h.alive());
  };
};

describe('incusEvents', () => {
  let ts: TestScheduler;
  beforeEach(() => {
    ts = newScheduler();
  });

  it('asks for lifecycle events of all projects by default', () => {
    expect(eventsPath()).toBe('/1.0/events?type=lifecycle&all-projects=true');
    expect(eventsPath({ allProjects: false, project: 'p2' })).toBe('/1.0/events?type=lifecycle&project=p2');
    expect(eventsPath({ types: ['lifecycle', 'logging'], allProjects: false })).toBe('/1.0/events?type=lifecycle%2Clogging');
  });

  it('emits connected, the decoded events and malformed frames, then disconnected, and reconnects after 1 s', () => {
    const server = fakeServer(ts, [
      (s) => {
        s.at(5, (h) => h.open());
        s.at(10, (h) => h.frame(STARTED));
        s.at(20, (h) => h.frame('garbage'));
        s.at(30, (h) => h.frame(OPERATION)); // another type: counted, not emitted
        s.at(40, (h) => h.closed('closed (1006)'));
      },
      (s) => s.at(5, (h) => h.open()),
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 1100ms !').toBe(
        '5ms c 4ms e 9ms m 19ms d 1004ms c',
        values,
      );
    });
    expect(server.sockets.map((s) => s.openedAt)).toEqual([0, 1040]);
  });

  it('waits 1, 2, 4 ... 60 s between failed attempts, and 1 s again once a session opened', () => {
    const scripts = Array.from({ length: 9 }, () => refuse);
    scripts.push((s) => {
      s.at(0, (h) => h.open());
      s.at(10, (h) => h.closed('closed (1006)'));
    });
    scripts.push(refuse);
    const server = fakeServer(ts, scripts);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 300s !').toBe('243s c 9ms d', {
        ...values,
        d: values.d,
      });
    });
    const times = server.sockets.map((s) => s.openedAt);
    // attempts 1..9 fail: waits 1, 2, 4, 8, 16, 32, 60, 60, 60 s; the 10th opens at 243 s.
    expect(times.slice(0, 10)).toEqual([0, 1000, 3000, 7000, 15000, 31000, 63000, 123000, 183000, 243000]);
    // after that session: 1 s, then 2 s, 4 s ... again.
    expect(times.slice(10, 14)).toEqual([244010, 246010, 250010, 258010]);
  });

  it('does not reset the backoff for an attempt that never opened', () => {
    const server = fakeServer(ts, [
      refuse,
      refuse,
      (s) => s.at(500, (h) => h.closed('socket hang up')), // connected at TCP level, never upgraded
      refuse,
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 20s !').toBe('-');
    });
    expect(server.sockets.map((s) => s.openedAt)).toEqual([0, 1000, 3000, 7500, 15500]);
  });

  it('pings every 10 s and ends a session that hears nothing for 30 s as half-open, then reconnects', () => {
    const server = fakeServer(ts, [(s) => s.handlers.open(), (s) => s.at(1, (h) => h.open())]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 31500ms !').toBe('c 29999ms h 1000ms c', values);
    });
    // the deadline at 30 s is met before the third ping
    expect(server.sockets[0].pings).toEqual([10000, 20000]);
    expect(server.sockets[0].terminated).toBe(true);
    expect(server.sockets[1].openedAt).toBe(31000);
  });

  it('keeps a session alive for as long as pongs come back, and counts frames as life too', () => {
    const server = fakeServer(ts, [
      (s) => {
        s.handlers.open();
        answerPings(s);
      },
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 300s !').toBe('c', values);
    });
    expect(server.sockets).toHaveLength(1);
    expect(server.sockets[0].pings).toHaveLength(30);

    ts = newScheduler();
    const quiet = fakeServer(ts, [
      (s) => {
        s.handlers.open();
        s.at(25_000, (h) => h.frame(STARTED)); // no pongs, but a frame at 25 s: the deadline moves to 55 s
      },
      hang,
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: quiet.opener, scheduler: ts }), '^ 60s !').toBe('c 24999ms e 29999ms h', values);
    });
  });

  it('abandons an attempt whose handshake does not complete within the deadline, without a disconnected', () => {
    const server = fakeServer(ts, [
      (s) => s.at(45_000, (h) => h.open()), // too late: this socket was given up at 30 s
      (s) => s.at(2, (h) => h.open()),
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 60s !').toBe('31002ms c', values);
    });
    expect(server.sockets[0].terminated).toBe(true);
    expect(server.sockets.map((s) => s.openedAt)).toEqual([0, 31000]);
  });

  it('ignores whatever a given-up socket says afterwards', () => {
    const server = fakeServer(ts, [
      (s) => {
        s.handlers.open();
        s.at(10, (h) => h.closed('closed (1006)'));
        s.at(20, (h) => h.closed('closed again'));
        s.at(30, (h) => h.frame(STARTED));
        s.at(40, (h) => h.open());
      },
      hang,
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts }), '^ 500ms !').toBe('c 9ms d', values);
    });
  });

  it('closes the socket and leaves no timer armed when unsubscribed, open or waiting to reconnect', () => {
    const clock = tracking(ts);
    const open = fakeServer(ts, [(s) => s.handlers.open()]);
    let armedAfter = -1;
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: open.opener, scheduler: clock.scheduler }), '^ 15s !').toBe('c', values);
      ts.schedule(() => (armedAfter = clock.armed()), 15_001);
    });
    expect(open.sockets[0].terminated).toBe(true);
    expect(open.sockets[0].pings).toEqual([10000]);
    expect(armedAfter).toBe(0);

    ts = newScheduler();
    const waiting = tracking(ts);
    const refused = fakeServer(ts, [refuse]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: refused.opener, scheduler: waiting.scheduler }), '^ 2s !').toBe('-');
      ts.schedule(() => (armedAfter = waiting.armed()), 2001);
    });
    expect(armedAfter).toBe(0);
    expect(refused.sockets.map((s) => s.openedAt)).toEqual([0, 1000]); // none after the unsubscribe
  });

  it('counts frames, attempts and whether it is connected', async () => {
    const registry = new Registry();
    const server = fakeServer(ts, [
      refuse,
      (s) => {
        s.handlers.open();
        s.at(1, (h) => h.frame(STARTED));
        s.at(2, (h) => h.frame(STARTED));
        s.at(3, (h) => h.frame('{'));
        s.at(4, (h) => h.frame(OPERATION));
      },
    ]);
    ts.run(({ expectObservable }) => {
      expectObservable(incusEvents({ openSocket: server.opener, scheduler: ts, registry }), '^ 1010ms !').toBe('1000ms c e e m', {
        ...values,
        m: { kind: 'malformed', reason: 'not JSON: {' },
      });
    });
    const text = await registry.metrics();
    expect(text).toContain('incus_events_frames_total{result="event"} 2');
    expect(text).toContain('incus_events_frames_total{result="malformed"} 1');
    expect(text).toContain('incus_events_frames_total{result="ignored"} 1');
    expect(text).toContain('incus_events_connects_total{result="opened"} 1');
    expect(text).toContain('incus_events_connects_total{result="failed"} 1');
    // unsubscribed while open: no longer connected
    expect(text).toContain('incus_events_connected 0');
  });

  it('counts and emits every malformed frame of a flood, but logs five a minute and a summary (issue 14 item 6)', () => {
    const chunks: string[] = [];
    const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()) }));
    const server = fakeServer(ts, [
      (s) => {
        s.handlers.open();
        for (let i = 1; i <= 5000; i++) s.at(i, (h) => h.frame(`junk ${i}`));
      },
    ]);
    let malformed = 0;
    ts.run(() => {
      const sub = incusEvents({
        openSocket: server.opener,
        scheduler: ts,
        logger,
        pingIntervalMs: 1_000_000,
        readDeadlineMs: 1_000_000,
      }).subscribe((item) => {
        if (item.kind === 'malformed') malformed++;
      });
      ts.schedule(() => sub.unsubscribe(), 70_000);
    });
    expect(malformed).toBe(5000);
    const lines = chunks
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const frames = lines.filter((l) => l.key === 'incus_frame');
    expect(frames).toHaveLength(6);
    expect(frames[5]).toMatchObject({ suppressed: 4995, total: 5000, reason: 'not JSON: junk 5000' });
  });

  it('alternates connected and disconnected, events only in between, and keeps to the backoff, whatever the server does', () => {
    type Behaviour = { kind: 'refuse' } | { kind: 'hang' } | { kind: 'session'; openAfter: number; frames: number; closeAfter: number };
    const behaviour: fc.Arbitrary<Behaviour> = fc.oneof(
      fc.constant<Behaviour>({ kind: 'refuse' }),
      fc.constant<Behaviour>({ kind: 'hang' }),
      fc.record({
        kind: fc.constant('session' as const),
        openAfter: fc.integer({ min: 0, max: 40_000 }),
        frames: fc.integer({ min: 0, max: 3 }),
        closeAfter: fc.oneof(fc.integer({ min: 1, max: 29_000 }), fc.integer({ min: 31_000, max: 90_000 })),
      }),
    );
    fc.assert(
      fc.property(fc.array(behaviour, { minLength: 1, maxLength: 12 }), (plan) => {
        const ts = newScheduler();
        const items: IncusStreamItem[] = [];
        const server = fakeServer(
          ts,
          plan.map((b) => (s: FakeSocket) => {
            if (b.kind === 'refuse') s.at(0, (h) => h.closed('refused'));
            if (b.kind === 'session') {
              s.at(b.openAfter, (h) => h.open());
              for (let i = 1; i <= b.frames; i++) s.at(b.openAfter + i, (h) => h.frame(STARTED));
              s.at(b.openAfter + b.closeAfter, (h) => h.closed('closed (1006)'));
            }
          }),
        );
        ts.run(() => {
          const sub = incusEvents({ openSocket: server.opener, scheduler: ts }).subscribe((item) => items.push(item));
          ts.schedule(() => sub.unsubscribe(), 1_500_000);
        });
        let open = false;
        for (const item of items) {
          if (item.kind === 'connected') expect(open).toBe(false);
          if (item.kind === 'disconnected' || item.kind === 'event') expect(open).toBe(true);
          open = item.kind === 'connected' ? true : item.kind === 'disconnected' ? false : open;
        }
        // Each gap between attempts is how long the attempt lasted plus the wait: 1 s after an
        // opened session, else double the wait before (at most 60 s).
        const times = server.sockets.map((s) => s.openedAt);
        let wait = 1000;
        for (let i = 1; i < times.length; i++) {
          const { lasted, opened } = outcome(plan[Math.min(i - 1, plan.length - 1)]);
          if (opened) wait = 1000;
          expect(times[i] - times[i - 1]).toBe(lasted + wait);
          wait = Math.min(wait * 2, 60_000);
        }
      }),
      { numRuns: 200 },
    );

    /** How long an attempt lasts: refused at once, abandoned at the 30 s handshake deadline, or a session closed or found silent for 30 s. */
    function outcome(b: Behaviour): { lasted: number; opened: boolean } {
      if (b.kind === 'refuse') return { lasted: 0, opened: false };
      if (b.kind === 'hang' || b.openAfter >= 30_000) return { lasted: 30_000, opened: false };
      return { lasted: b.openAfter + Math.min(b.closeAfter, b.frames + 30_000), opened: true };
    }
  });
});
