import fc from 'fast-check';
import { RingQueue } from '@rxfleet/operators';

describe('RingQueue', () => {
  it('allocates nothing until the first push, then two slots', () => {
    const ring = new RingQueue<number>();
    expect(ring.capacity).toBe(0);
    ring.push(1);
    expect(ring.capacity).toBe(2);
  });

  it('doubles when full: 2, 4, 8', () => {
    const ring = new RingQueue<number>();
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      ring.push(i);
      seen.push(ring.capacity);
    }
    expect(seen).toEqual([2, 2, 4, 4, 8, 8, 8, 8]);
  });

  it('halves once a quarter full, and never below two slots', () => {
    const ring = new RingQueue<number>();
    for (let i = 0; i < 16; i++) ring.push(i);
    expect(ring.capacity).toBe(16);
    const capacities: number[] = [];
    while (ring.length > 0) {
      ring.shift();
      capacities.push(ring.capacity);
    }
    // 16 slots: at 4 left it halves to 8; at 2 left to 4; at 1 left to 2; stays 2 when empty.
    expect(capacities).toEqual([16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 8, 8, 4, 2, 2]);
  });

  it('keeps order across the wrap and through a resize of a wrapped ring', () => {
    const ring = new RingQueue<string>();
    ring.push('a');
    ring.push('b');
    expect(ring.shift()).toBe('a');
    ring.push('c'); // wraps: tail is now before head
    ring.push('d'); // full and wrapped: grows
    expect([...ring]).toEqual(['b', 'c', 'd']);
    expect([ring.shift(), ring.shift(), ring.shift(), ring.shift()]).toEqual(['b', 'c', 'd', undefined]);
  });

  it('peek and at look without removing', () => {
    const ring = new RingQueue<number>();
    expect(ring.peek()).toBeUndefined();
    ring.push(7);
    ring.push(8);
    expect(ring.peek()).toBe(7);
    expect(ring.at(1)).toBe(8);
    expect(ring.at(2)).toBeUndefined();
    expect(ring.at(-1)).toBeUndefined();
    expect(ring.length).toBe(2);
  });

  it('clear empties it and lets its cells go', () => {
    const ring = new RingQueue<number>();
    for (let i = 0; i < 5; i++) ring.push(i);
    ring.clear();
    expect(ring.length).toBe(0);
    expect(ring.capacity).toBe(0);
    expect(ring.shift()).toBeUndefined();
  });

  it('behaves as a FIFO under any sequence of pushes and shifts, within its size bounds', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer(), fc.constant<'shift'>('shift')), { maxLength: 500 }), (ops) => {
        const ring = new RingQueue<number>();
        const model: number[] = [];
        for (const op of ops) {
          if (op === 'shift') expect(ring.shift()).toBe(model.shift());
          else {
            ring.push(op);
            model.push(op);
          }
          expect(ring.length).toBe(model.length);
          expect([...ring]).toEqual(model);
          if (ring.capacity > 0) {
            expect(ring.capacity).toBeGreaterThanOrEqual(Math.max(2, ring.length));
            // Never more than four times what it holds (plus the floor of two).
            expect(ring.capacity).toBeLessThanOrEqual(Math.max(2, 4 * ring.length));
          }
        }
      }),
    );
  });
});
