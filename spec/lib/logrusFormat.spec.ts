import { goQuote, logrusJsonLine, logrusLine, rfc3339 } from '../../lib/logrusFormat';
import { redactUrlCredentials } from '../../lib/redact';

// 2026-12-01T08:00:00Z
const T = Date.UTC(2026, 11, 1, 8, 0, 0, 123);

describe("logrusLine: the text form of logrus's TextFormatter with full timestamps", () => {
  it('writes time, level and msg first, then the other fields sorted, quoting only where logrus quotes', () => {
    const line = logrusLine(
      {
        level: 30,
        time: T,
        pid: 1,
        hostname: 'h',
        name: 'rxfleet-provision',
        msg: 'Provisioned n1.example.net',
        workers: 16,
        identity: 'n1.example.net',
        leader: true,
      },
      0,
    );
    expect(line).toBe(
      'time="2026-12-01T08:00:00Z" level=info msg="Provisioned n1.example.net" identity=n1.example.net leader=true name=rxfleet-provision workers=16',
    );
  });

  it('names levels as logrus does (warning, not warn) and writes an err as the error field', () => {
    expect(logrusLine({ level: 40, time: T, msg: 'disconnected' }, 0)).toBe('time="2026-12-01T08:00:00Z" level=warning msg=disconnected');
    expect(
      logrusLine({ level: 50, time: T, msg: 'failed', err: { type: 'Error', message: 'boom: it "broke"', stack: 'Error: ...' } }, 0),
    ).toBe('time="2026-12-01T08:00:00Z" level=error msg=failed error="boom: it \\"broke\\""');
    expect(logrusLine({ level: 20, time: T, msg: 'x' }, 0)).toMatch(/ level=debug /);
    expect(logrusLine({ level: 60, time: T, msg: 'x' }, 0)).toMatch(/ level=fatal /);
  });

  it("quotes with Go's %q: escapes quotes, backslashes and control characters, keeps printable Unicode", () => {
    expect(goQuote('a "b" \\ c\nd\te\x01')).toBe('"a \\"b\\" \\\\ c\\nd\\te\\x01"');
    expect(goQuote('café')).toBe('"café"');
    // Bare when logrus would leave it bare; empty is bare too.
    expect(logrusLine({ level: 30, time: T, msg: '', a: 'x/y@z^1+2-3.4_5', b: '', c: 'has space', d: ['l', 1], e: { k: 'v' } }, 0)).toBe(
      'time="2026-12-01T08:00:00Z" level=info msg= a=x/y@z^1+2-3.4_5 b= c="has space" d="[\\"l\\",1]" e="{\\"k\\":\\"v\\"}"',
    );
  });

  it('prints the time in RFC 3339 to the second, with the local offset, as Go does', () => {
    expect(rfc3339(T, 0)).toBe('2026-12-01T08:00:00Z');
    expect(rfc3339(T, 60)).toBe('2026-12-01T09:00:00+01:00');
    expect(rfc3339(T, -330)).toBe('2026-12-01T02:30:00-05:30');
  });
});

describe('redactUrlCredentials', () => {
  it('removes the user information of every URL, whatever the scheme, and leaves the rest', () => {
    expect(redactUrlCredentials('nats://admin:PASS@broker:4222,tls://tok@b2:4222 and nats://plain:4222 mail@example.net')).toBe(
      'nats://[redacted]@broker:4222,tls://[redacted]@b2:4222 and nats://plain:4222 mail@example.net',
    );
    expect(redactUrlCredentials('{"servers":["nats://u:p%40ss@h:1"]}')).toBe('{"servers":["nats://[redacted]@h:1"]}');
  });
});

describe("logrusJsonLine: logrus's JSONFormatter, what go-choria writes to a logfile", () => {
  it('one object, keys sorted as Go sorts a map, level by name, msg, time in RFC 3339; pid and hostname gone', () => {
    const line = logrusJsonLine(
      { level: 40, time: T, pid: 7, hostname: 'h', name: 'rxfleet-provision', msg: 'Lost leadership', identity: 'p1', workers: 4 },
      60,
    );
    expect(line).toBe(
      '{"identity":"p1","level":"warning","msg":"Lost leadership","name":"rxfleet-provision","time":"2026-12-01T09:00:00+01:00","workers":4}',
    );
    expect(JSON.parse(logrusJsonLine({ level: 30, time: T, msg: 'x' }, 0))).toEqual({
      level: 'info',
      msg: 'x',
      time: '2026-12-01T08:00:00Z',
    });
    for (const [pino, logrus] of [
      [20, 'debug'],
      [50, 'error'],
      [60, 'fatal'],
    ] as const)
      expect(JSON.parse(logrusJsonLine({ level: pino, time: T, msg: 'x' }, 0)).level).toBe(logrus);
  });

  it("writes an err as logrus's error field, keeps a field named like logrus's own as fields.<name>, escapes <, > and & as Go does", () => {
    const line = logrusJsonLine(
      { level: 50, time: T, msg: 'a <b> & c', err: { message: 'boom', stack: 'Error: ...' }, level_x: 1, msgid: 2 },
      0,
    );
    expect(line).toBe(
      '{"error":"boom","level":"error","level_x":1,"msg":"a \\u003cb\\u003e \\u0026 c","msgid":2,"time":"2026-12-01T08:00:00Z"}',
    );
    expect(JSON.parse(line).msg).toBe('a <b> & c');
    expect(JSON.parse(logrusJsonLine({ level: 30, time: T, msg: 'm', logrus_error: 'x' }, 0))).toMatchObject({
      'fields.logrus_error': 'x',
    });
  });
});
