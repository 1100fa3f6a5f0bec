import { Subject, from, map, take } from 'rxjs';
import { LineSplitter, LineTooLongError, OperatorKitError, splitLines } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('LineSplitter', () => {
  it('joins lines across chunks, splits several in one, drops a CR before the LF, keeps UTF-8 whole', () => {
    const splitter = new LineSplitter(100);
    const euro = bytes('€');
    expect(splitter.push(bytes('{"a":'))).toEqual({ lines: [], oversize: false });
    expect(splitter.push(new Uint8Array([...bytes('1}\r\nb'), euro[0]]))).toEqual({ lines: ['{"a":1}'], oversize: false });
    expect(splitter.push(new Uint8Array([...euro.subarray(1), ...bytes('\nc\n\n')])).lines).toEqual(['b€', 'c', '']);
  });

  it('reports a line longer than the limit, whether it arrives whole or in pieces, and then nothing more', () => {
    const whole = new LineSplitter(8);
    expect(whole.push(bytes('ok\n123456789\nlater\n'))).toEqual({ lines: ['ok'], oversize: true });
    expect(whole.push(bytes('more\n'))).toEqual({ lines: [], oversize: true });
    expect(whole.end()).toBeUndefined();
    const pieces = new LineSplitter(8);
    expect(pieces.push(bytes('12345')).oversize).toBe(false);
    expect(pieces.push(bytes('6789')).oversize).toBe(true);
    const exact = new LineSplitter(8);
    expect(exact.push(bytes('12345678\n'))).toEqual({ lines: ['12345678'], oversize: false });
  });

  it('takes string chunks as their UTF-8 (the limit is in bytes); end() gives the unterminated rest once', () => {
    const splitter = new LineSplitter(4);
    expect(splitter.push('€\nab')).toEqual({ lines: ['€'], oversize: false });
    expect(splitter.push('c\r')).toEqual({ lines: [], oversize: false });
    expect(splitter.end()).toBe('abc');
    expect(splitter.end()).toBeUndefined();
    // Two euros are six bytes: too long for four.
    expect(new LineSplitter(4).push('€€\n').oversize).toBe(true);
    expect(() => new LineSplitter(0)).toThrow(RangeError);
  });
});

describe('splitLines', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a--b------|', { a: 'x\ny', b: 'z\r\n\nw' });
      expectObservable(source.pipe(splitLines())).toBe('-x--(YE)---(W|)', { x: 'x', Y: 'yz', E: '', W: 'w' });
      expectSubscriptions(source.subscriptions).toBe('^----------!');
    });
  });

  it('a line over the limit errors with LineTooLongError after the lines before it, and unsubscribes the source', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a-b--|', { a: bytes('ok\n1234'), b: bytes('5\nlater\n') });
      expectObservable(source.pipe(splitLines({ maxBytes: 4 }))).toBe('o-#', { o: 'ok' }, new LineTooLongError(4));
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
    const error = new LineTooLongError(4);
    expect([error instanceof OperatorKitError, error.name, error.maxBytes, error.message]).toEqual([
      true,
      'LineTooLongError',
      4,
      'a line longer than 4 bytes',
    ]);
    expect(() => splitLines({ maxBytes: 0 })).toThrow(RangeError);
  });

  it('a source error errors at once, dropping a partial line; completion with nothing after the last newline adds no line', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(cold('a-#', { a: 'x\npart' }).pipe(splitLines())).toBe('x-#', { x: 'x' });
      expectObservable(cold('a-|', { a: 'x\n' }).pipe(splitLines())).toBe('x-|', { x: 'x' });
    });
  });

  it('unsubscribing downstream (take) unsubscribes the source', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a-b-|', { a: 'one\ntwo\nthr', b: 'ee\n' });
      expectObservable(source.pipe(splitLines(), take(2))).toBe('(ot|)', { o: 'one', t: 'two' });
      expectSubscriptions(source.subscriptions).toBe('(^!)');
    });
  });

  it('a synchronous source (an array of chunks) is split as it comes, its last line at completion', () => {
    const scheduler = newScheduler();
    scheduler.run(({ expectObservable }) => {
      expectObservable(from(['a', 'b\nc', '\n', 'd']).pipe(splitLines())).toBe('(xyz|)', { x: 'ab', y: 'c', z: 'd' });
    });
  });

  it("keeps order when a consumer feeds the source from an emission: the rest of a chunk's lines go first", () => {
    const source = new Subject<string>();
    const out: string[] = [];
    source
      .pipe(
        splitLines(),
        map((line) => line.toUpperCase()),
      )
      .subscribe((line) => {
        out.push(line);
        if (line === 'A') source.next('fed\n');
      });
    source.next('a\nb\nc\n');
    expect(out).toEqual(['A', 'B', 'C', 'FED']);
  });
});
