import fc from 'fast-check';
import { ksuidTime, newKsuid } from '../../../lib/choria/ksuid';

describe('newKsuid / ksuidTime', () => {
  it("encodes segmentio/ksuid's reference value", () => {
    // segmentio/ksuid's README: 0ujtsYcgvSTl8PAuAdqWYSMnLOv has timestamp 107608047 (+ epoch 1400000000)
    // and payload B5A1CD34B5F99D1154FB6853345C9735.
    const random = Buffer.from('B5A1CD34B5F99D1154FB6853345C9735', 'hex');
    expect(newKsuid((1_400_000_000 + 107_608_047) * 1000, random)).toBe('0ujtsYcgvSTl8PAuAdqWYSMnLOv');
    expect(ksuidTime('0ujtsYcgvSTl8PAuAdqWYSMnLOv')).toBe((1_400_000_000 + 107_608_047) * 1000);
  });

  it('round-trips the second it was made in, and is always 27 base62 characters', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_400_000_000_000, max: 5_000_000_000_000 }), (ms) => {
        const id = newKsuid(ms);
        expect(id).toMatch(/^[0-9A-Za-z]{27}$/);
        expect(ksuidTime(id)).toBe(Math.floor(ms / 1000) * 1000);
      }),
    );
  });

  it('refuses what is not a KSUID', () => {
    expect(() => ksuidTime('short')).toThrow('not a KSUID');
    expect(() => ksuidTime('zzzzzzzzzzzzzzzzzzzzzzzzzzz')).toThrow('not a KSUID');
  });
});
