import fc from 'fast-check';
import { OrderedLine, Place, PlaceState } from '@rxfleet/operators';

describe('OrderedLine', () => {
  it('flushes in arrival order though places settle out of order', () => {
    const line = new OrderedLine<string>();
    const a = line.push('a');
    const b = line.push('b');
    const c = line.push('c');
    line.settle(c);
    line.settle(b);
    expect(line.flush()).toEqual([]);
    expect(line.length).toBe(3);
    line.settle(a);
    expect(line.flush()).toEqual(['a', 'b', 'c']);
    expect(line.length).toBe(0);
  });

  it('flushes only the contiguous settled head, stopping at the first pending place', () => {
    const line = new OrderedLine<string>();
    line.push('a', true);
    const b = line.push('b');
    line.push('c', true);
    expect(line.flush()).toEqual(['a']);
    expect(line.peek()).toBe(b);
    expect(line.flush()).toEqual([]);
    line.settle(b);
    expect(line.flush()).toEqual(['b', 'c']);
  });

  it('settles with a replacement, told apart by presence so undefined can replace', () => {
    const line = new OrderedLine<string | undefined>();
    const kept = line.push('kept');
    const replaced = line.push('old');
    const blanked = line.push('blank me');
    line.settle(kept);
    line.settle(replaced, 'new');
    line.settle(blanked, undefined);
    expect(replaced.value).toBe('new');
    expect(line.flush()).toEqual(['kept', 'new', undefined]);
  });

  it('the first settlement wins: settling twice, a trashed or a gone place is a no-op', () => {
    const line = new OrderedLine<string>();
    const a = line.push('a');
    const b = line.push('b');
    const c = line.push('c');
    expect(line.settle(b, 'B')).toBe(true);
    expect(line.settle(b, 'B2')).toBe(false);
    expect(line.trash(c)).toBe(true);
    expect(line.trash(c)).toBe(false);
    expect(line.settle(c, 'C')).toBe(false);
    expect(c.state).toBe('trashed');
    expect(line.settle(a)).toBe(true);
    expect(line.flush()).toEqual(['a', 'B']);
    expect(line.settle(a, 'late')).toBe(false);
    expect(line.trash(a)).toBe(false);
    expect(line.trash(c)).toBe(false);
    expect(a.state).toBe('left');
    expect(line.length).toBe(0);
  });

  it('a trashed head is skipped and lets the next go', () => {
    const line = new OrderedLine<string>();
    const a = line.push('a');
    line.push('b', true);
    expect(line.flush()).toEqual([]);
    line.trash(a);
    expect(line.flush()).toEqual(['b']);
    expect(a.state).toBe('left');
  });

  it('a trashed middle keeps its place: nothing behind it leaves before the head', () => {
    const line = new OrderedLine<string>();
    const a = line.push('a');
    const b = line.push('b');
    line.push('c', true);
    line.trash(b);
    expect(line.length).toBe(3);
    expect(line.flush()).toEqual([]);
    expect([...line].map((p) => p.state)).toEqual(['pending', 'trashed', 'settled']);
    line.settle(a);
    expect(line.flush()).toEqual(['a', 'c']);
  });

  it('a settled place still waiting can be trashed', () => {
    const line = new OrderedLine<string>();
    const a = line.push('a');
    const b = line.push('b', true);
    expect(line.trash(b)).toBe(true);
    line.settle(a);
    expect(line.flush()).toEqual(['a']);
  });

  it('drain pops everything in order: pending as they hold, settled as replaced, trashed skipped', () => {
    const line = new OrderedLine<string>();
    line.push('a');
    const b = line.push('b');
    const c = line.push('c');
    line.push('d', true);
    line.settle(b, 'B');
    line.trash(c);
    expect(line.drain()).toEqual(['a', 'B', 'd']);
    expect(line.length).toBe(0);
    expect(line.drain()).toEqual([]);
    expect(line.flush()).toEqual([]);
  });

  it('keeps no value alive through a handle once it has left or been trashed', () => {
    const line = new OrderedLine<{ big: string }>();
    const a = line.push({ big: 'a' }, true);
    const b = line.push({ big: 'b' });
    const c = line.push({ big: 'c' });
    expect(a.value).toEqual({ big: 'a' });
    line.trash(b);
    expect(b.value).toBeUndefined();
    line.flush();
    expect([a.state, a.value]).toEqual(['left', undefined]);
    line.drain();
    expect([c.state, c.value]).toEqual(['left', undefined]);
  });

  it('handles survive the ring growing, wrapping and shrinking under them', () => {
    const line = new OrderedLine<number>();
    const places: Place<number>[] = [];
    // Wrap the ring first so the grow copies a wrapped range.
    line.push(-1, true);
    line.flush();
    for (let i = 0; i < 200; i++) places.push(line.push(i));
    expect(line.capacity).toBe(256);
    for (let i = 199; i >= 0; i--) line.settle(places[i], i * 10);
    expect(line.flush()).toEqual(places.map((_, i) => i * 10));
    expect(line.capacity).toBe(2);
  });

  it('refuses a place taken in another line', () => {
    const mine = new OrderedLine<number>();
    const theirs = new OrderedLine<number>();
    const place = theirs.push(1);
    expect(() => mine.settle(place)).toThrow(TypeError);
    expect(() => mine.trash(place)).toThrow(TypeError);
    expect(() => mine.settle({ state: 'pending', value: 1 })).toThrow(TypeError);
    expect(place.state).toBe('pending');
  });

  type Op =
    | { op: 'push'; value: number; settled: boolean }
    | { op: 'settle'; pick: number; replacement: number | null }
    | { op: 'trash'; pick: number }
    | { op: 'flush' }
    | { op: 'drain' };

  const push = fc.record({ op: fc.constant<'push'>('push'), value: fc.integer(), settled: fc.boolean() });
  const settle = fc.record({
    op: fc.constant<'settle'>('settle'),
    pick: fc.nat(),
    replacement: fc.option(fc.integer(), { nil: null }),
  });
  const trash = fc.record({ op: fc.constant<'trash'>('trash'), pick: fc.nat() });
  const flush = fc.constant<Op>({ op: 'flush' });
  const drain = fc.constant<Op>({ op: 'drain' });

  const mixed = fc.array(
    fc.oneof(
      { arbitrary: push, weight: 6 },
      { arbitrary: settle, weight: 4 },
      { arbitrary: trash, weight: 1 },
      { arbitrary: flush, weight: 3 },
      { arbitrary: drain, weight: 1 },
    ),
    { maxLength: 300 },
  );
  const burst = fc.array(push, { minLength: 65, maxLength: 200 });
  const settling = fc.array(fc.oneof({ arbitrary: settle, weight: 6 }, { arbitrary: trash, weight: 1 }, { arbitrary: flush, weight: 3 }), {
    minLength: 100,
    maxLength: 600,
  });

  it('keeps arrival order and loses nothing under any sequence, across ring grow and shrink', () => {
    let grewPast64 = 0;
    let shrankBack = 0;
    fc.assert(
      fc.property(mixed, burst, settling, fc.boolean(), (before, pushes, after, finishByDrain) => {
        const line = new OrderedLine<number>();
        // The model: every place ever taken, in arrival order, with what it should hold.
        const handles: Place<number>[] = [];
        const model: { state: PlaceState; value: number | undefined }[] = [];
        let front = 0; // index in `model` of the first place not yet gone
        let maxCapacity = 0;

        const expectFlush = (all: boolean): number[] => {
          const out: number[] = [];
          while (front < model.length && (all || model[front].state !== 'pending')) {
            const m = model[front++];
            if (m.state !== 'trashed') out.push(m.value as number);
            m.state = 'left';
            m.value = undefined;
          }
          return out;
        };

        const snapshot = (places: Iterable<Place<number>>): string => JSON.stringify([...places].map((p) => [p.state, p.value ?? null]));
        const expectLineToMatch = (): void =>
          expect(snapshot(line)).toBe(JSON.stringify(model.slice(front).map((m) => [m.state, m.value ?? null])));

        const apply = (op: Op): void => {
          switch (op.op) {
            case 'push': {
              handles.push(line.push(op.value, op.settled));
              model.push({ state: op.settled ? 'settled' : 'pending', value: op.value });
              break;
            }
            case 'settle': {
              if (handles.length === 0) return;
              const k = op.pick % handles.length;
              const m = model[k];
              const changes = m.state === 'pending';
              const result = op.replacement === null ? line.settle(handles[k]) : line.settle(handles[k], op.replacement);
              if (changes) {
                m.state = 'settled';
                if (op.replacement !== null) m.value = op.replacement;
              }
              expect(`${result} ${handles[k].state} ${handles[k].value}`).toBe(`${changes} ${m.state} ${m.value}`);
              break;
            }
            case 'trash': {
              if (handles.length === 0) return;
              const k = op.pick % handles.length;
              const m = model[k];
              const changes = m.state === 'pending' || m.state === 'settled';
              const result = line.trash(handles[k]);
              if (changes) {
                m.state = 'trashed';
                m.value = undefined;
              }
              expect(`${result} ${handles[k].state} ${handles[k].value}`).toBe(`${changes} ${m.state} ${m.value}`);
              break;
            }
            case 'flush':
              expect(line.flush()).toEqual(expectFlush(false));
              break;
            case 'drain':
              expect(line.drain()).toEqual(expectFlush(true));
              break;
          }
          // The whole line is compared whenever something leaves it, and at the end; comparing it
          // after every op too would make each run quadratic without covering anything more.
          if (op.op === 'flush' || op.op === 'drain') expectLineToMatch();
          const { length, capacity } = line;
          const withinBounds = capacity === 0 || (capacity >= Math.max(2, length) && capacity <= Math.max(2, 4 * length));
          expect(`length ${length}, capacity ${capacity} within bounds: ${withinBounds}`).toBe(
            `length ${model.length - front}, capacity ${capacity} within bounds: true`,
          );
          maxCapacity = Math.max(maxCapacity, line.capacity);
        };

        for (const op of [...before, ...pushes, ...after]) apply(op);
        // Finish: everything still waiting must come out, in order, either way.
        if (finishByDrain) apply({ op: 'drain' });
        else {
          for (let k = front; k < model.length; k++) apply({ op: 'settle', pick: k, replacement: null });
          apply({ op: 'flush' });
        }
        expect(line.length).toBe(0);
        expect(model.every((m) => m.state === 'left')).toBe(true);
        expect(snapshot(handles)).toBe(JSON.stringify(model.map((m) => [m.state, m.value ?? null])));
        if (maxCapacity > 64) grewPast64++;
        if (maxCapacity > 64 && line.capacity <= 2) shrankBack++;
      }),
      { numRuns: 100 },
    );
    // The generators are meant to exercise resizes on every run; make sure they do.
    expect(grewPast64).toBe(100);
    expect(shrankBack).toBe(100);
  });
});
