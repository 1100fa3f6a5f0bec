import { seededRandom } from '../../../lib/simulate/seededRandom';

/** A seeded source of the choices a fuzzer makes; the same seed makes the same choices. */
export class Rng {
  private readonly next: () => number;

  constructor(seed: number) {
    this.next = seededRandom(seed);
  }

  /** In [0, 1). */
  float(): number {
    return this.next();
  }

  /** A whole number in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** A string of `length` characters drawn from `alphabet`. */
  chars(length: number, alphabet: string): string {
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[Math.floor(this.next() * alphabet.length)];
    return out;
  }

  /** A string mixing printable ASCII, control characters, multi-byte and lone surrogates. */
  text(maxLength = 24): string {
    const length = this.int(0, maxLength);
    let out = '';
    for (let i = 0; i < length; i++) {
      const kind = this.int(0, 9);
      if (kind < 6) out += String.fromCharCode(this.int(32, 126));
      else if (kind === 6) out += String.fromCharCode(this.int(0, 31));
      else if (kind === 7) out += this.pick(['é', '€', '😀', '\u2028', '\ufeff', '\u0000']);
      else if (kind === 8) out += String.fromCharCode(this.int(0xd800, 0xdfff));
      else
        out += this.pick([
          '"',
          '\\',
          '{',
          '}',
          '[',
          ']',
          ':',
          ',',
          '*',
          '&',
          '!',
          '<<',
          '%',
          '\n',
          '\t',
          '#',
          '|',
          '>',
          '-',
          '?',
          '@',
          '`',
        ]);
    }
    return out;
  }
}

/** A 32-bit seed for input `index` of a run seeded with `seed`: each input can be replayed alone. */
export function inputSeed(seed: number, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ index, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}
