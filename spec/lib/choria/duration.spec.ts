import { DurationSyntaxError, formatGoDuration, parseChoriaDuration, parseGoDuration } from '../../../lib/choria/duration';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('parseGoDuration (time.ParseDuration)', () => {
  it.each([
    ['0', 0],
    ['1s', 1000],
    ['1.5s', 1500],
    ['300ms', 300],
    ['1m30s', 90_000],
    ['2h45m', 2 * HOUR + 45 * MINUTE],
    ['-1m', -MINUTE],
    ['+2s', 2000],
    ['.5h', 30 * MINUTE],
    ['1.s', 1000],
    ['10us', 0.01],
    ['10µs', 0.01],
    ['1500ns', 0.0015],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ['', 'time: invalid duration ""'],
    ['1', 'time: missing unit in duration "1"'],
    ['1H', 'time: unknown unit "H" in duration "1H"'],
    ['5S', 'time: unknown unit "S" in duration "5S"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['.s', 'time: invalid duration ".s"'],
    ['1h-2m', 'time: unknown unit "h-" in duration "1h-2m"'],
    ['1h.', 'time: invalid duration "1h."'],
    ['abc', 'time: invalid duration "abc"'],
  ])("refuses %j with Go's message", (text, message) => {
    expect(() => parseGoDuration(text)).toThrow(new DurationSyntaxError(message));
  });
});

describe('parseChoriaDuration (go-choria util.ParseDuration)', () => {
  it.each([
    ['1m', MINUTE],
    ['  10m ', 10 * MINUTE],
    ['1h30m', 90 * MINUTE],
    ['2d', 2 * DAY],
    ['2D', 2 * DAY],
    ['1w', 7 * DAY],
    ['1W', 7 * DAY],
    ['1M', 30 * DAY],
    ['1y', 365 * DAY],
    ['1Y', 365 * DAY],
    ['1.5d', 36 * HOUR],
    // go-choria converts value*24 to whole hours: 0.03d is 0.72h, truncated to 0.
    ['0.03d', 0],
    ['', 0],
  ])('%j is %d ms', (text, ms) => {
    expect(parseChoriaDuration(text)).toBe(ms);
  });

  it.each([
    ['5H', 'time: unknown unit "H" in duration "5H"'],
    ['30S', 'time: unknown unit "S" in duration "30S"'],
    ['10', 'invalid time unit 0'],
    ['10x', 'invalid time unit x'],
    ['xd', 'strconv.ParseFloat: parsing "x": invalid syntax'],
    ['d', 'strconv.ParseFloat: parsing "": invalid syntax'],
  ])('refuses %j: %s', (text, message) => {
    expect(() => parseChoriaDuration(text)).toThrow(message);
  });
});

describe('formatGoDuration (time.Duration.String)', () => {
  it.each([
    [0, '0s'],
    [1500, '1.5s'],
    [MINUTE, '1m0s'],
    [2 * MINUTE + 3500, '2m3.5s'],
    [HOUR, '1h0m0s'],
    [26 * HOUR + 61_000, '26h1m1s'],
    [1.5, '1.5ms'],
    [0.0015, '1.5µs'],
    [0.000_001, '1ns'],
    [-1500, '-1.5s'],
  ])('%d ms prints as %s', (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });

  it('round-trips through parseGoDuration', () => {
    for (const ms of [1, 999, 61_001, 3 * HOUR + 7, 123.456]) expect(parseGoDuration(formatGoDuration(ms))).toBeCloseTo(ms, 9);
  });
});
