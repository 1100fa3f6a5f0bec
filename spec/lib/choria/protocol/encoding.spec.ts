import fc from 'fast-check';
import { decodeBase64Strict, sha256, sha256Base64 } from '../../../../lib/choria/protocol/encoding';

// Go's StdEncoding as a regular expression: the definition the fast check must agree with.
const GO_STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

describe('decodeBase64Strict', () => {
  it('refuses what Go refuses and Node would take: URL-safe, unpadded, whitespace, padding inside, other characters', () => {
    for (const text of ['QUJD-_8=', 'QUI', 'QU I=', 'QUJD\nREVG', 'AB==CD==', 'A===', '=AAA', 'QUJD.', 'QUJDé===', 'QUJD\u0000AAA'])
      expect(decodeBase64Strict(text)).toBeUndefined();
  });

  it('decodes padded standard base64 to its bytes, the empty text to none', () => {
    expect(decodeBase64Strict('QUJD')?.toString()).toBe('ABC');
    expect(decodeBase64Strict('QUI=')?.toString()).toBe('AB');
    expect(decodeBase64Strict('QQ==')?.toString()).toBe('A');
    expect(decodeBase64Strict('')?.length).toBe(0);
  });

  it('agrees with the regular expression on any text from base64 characters, padding and strays', () => {
    const char = fc.constantFrom(...'ABCDQwxyz0189+/=-_ \n.é\u0000'.split(''));
    fc.assert(
      fc.property(fc.array(char, { maxLength: 14 }), (chars) => {
        const text = chars.join('');
        const decoded = decodeBase64Strict(text);
        expect(decoded !== undefined).toBe(GO_STD_BASE64.test(text));
        if (decoded !== undefined) expect(decoded.equals(Buffer.from(text, 'base64'))).toBe(true);
      }),
      { numRuns: 20000 },
    );
  });

  it('agrees with the regular expression on the base64 of any bytes, and on it with one character changed', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.nat(), fc.constantFrom('=', '-', '_', ' ', '*'), (bytes, at, stray) => {
        const text = Buffer.from(bytes).toString('base64');
        expect(decodeBase64Strict(text)?.equals(Buffer.from(bytes))).toBe(true);
        if (text.length === 0) return;
        const i = at % text.length;
        const changed = text.slice(0, i) + stray + text.slice(i + 1);
        expect(decodeBase64Strict(changed) !== undefined).toBe(GO_STD_BASE64.test(changed));
      }),
    );
  });
});

describe('sha256', () => {
  it('hashes text as its UTF-8 bytes, in bytes and in base64', () => {
    // `printf 'héllo' | openssl dgst -sha256 -binary | base64`
    const expected = 'PEhZHY0JikU49eAT389AbpSOrE0yd7EL9hTildYGgXk=';
    expect(sha256Base64('héllo')).toBe(expected);
    expect(sha256(Buffer.from('héllo', 'utf8')).toString('base64')).toBe(expected);
  });
});
