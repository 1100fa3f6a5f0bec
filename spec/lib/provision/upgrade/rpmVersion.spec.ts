import fc from 'fast-check';
import { compareRpmVersions, parseRpmVersion, rpmvercmp } from '../../../../lib/provision/upgrade/rpmVersion';

describe('parseRpmVersion', () => {
  it.each([
    ['1.2.3', { epoch: 0, version: '1.2.3', release: '' }],
    ['1.2.3-4.el9', { epoch: 0, version: '1.2.3', release: '4.el9' }],
    ['2:1.0-1', { epoch: 2, version: '1.0', release: '1' }],
    [' 3:1.0', { epoch: 3, version: '1.0', release: '' }],
    ['x:1.0', { epoch: 0, version: '1.0', release: '' }],
    ['1.0-1-2', { epoch: 0, version: '1.0', release: '1-2' }],
    ['', { epoch: 0, version: '', release: '' }],
  ])('%j', (text, parsed) => {
    expect(parseRpmVersion(text)).toEqual(parsed);
  });
});

// rpm's own rpmvercmp test table (tests/rpmvercmp.at), the cases go-rpm-version's rules cover.
const RPMVERCMP: [string, string, -1 | 0 | 1][] = [
  ['1.0', '1.0', 0],
  ['1.0', '2.0', -1],
  ['2.0', '1.0', 1],
  ['2.0.1', '2.0.1', 0],
  ['2.0', '2.0.1', -1],
  ['2.0.1', '2.0', 1],
  ['2.0.1a', '2.0.1a', 0],
  ['2.0.1a', '2.0.1', 1],
  ['2.0.1', '2.0.1a', -1],
  ['5.5p1', '5.5p1', 0],
  ['5.5p1', '5.5p2', -1],
  ['5.5p2', '5.5p1', 1],
  ['5.5p10', '5.5p10', 0],
  ['5.5p1', '5.5p10', -1],
  ['5.5p10', '5.5p1', 1],
  ['10xyz', '10.1xyz', -1],
  ['10.1xyz', '10xyz', 1],
  ['xyz10', 'xyz10', 0],
  ['xyz10', 'xyz10.1', -1],
  ['xyz10.1', 'xyz10', 1],
  ['xyz.4', 'xyz.4', 0],
  ['xyz.4', '8', -1],
  ['8', 'xyz.4', 1],
  ['xyz.4', '2', -1],
  ['2', 'xyz.4', 1],
  ['5.5p2', '5.6p1', -1],
  ['5.6p1', '5.5p2', 1],
  ['5.6p1', '6.5p1', -1],
  ['6.5p1', '5.6p1', 1],
  ['6.0.rc1', '6.0', 1],
  ['6.0', '6.0.rc1', -1],
  ['10b2', '10a1', 1],
  ['10a2', '10b2', -1],
  ['1.0aa', '1.0aa', 0],
  ['1.0a', '1.0aa', -1],
  ['1.0aa', '1.0a', 1],
  ['10.0001', '10.0001', 0],
  ['10.0001', '10.1', 0],
  ['10.1', '10.0001', 0],
  ['10.0001', '10.0039', -1],
  ['10.0039', '10.0001', 1],
  ['4.999.9', '5.0', -1],
  ['5.0', '4.999.9', 1],
  ['20101121', '20101121', 0],
  ['20101121', '20101122', -1],
  ['20101122', '20101121', 1],
  ['2_0', '2_0', 0],
  ['2.0', '2_0', 0],
  ['2_0', '2.0', 0],
  ['a', 'a', 0],
  ['a+', 'a+', 0],
  ['a+', 'a_', 0],
  ['a_', 'a+', 0],
  ['+a', '+a', 0],
  ['+a', '_a', 0],
  ['_a', '+a', 0],
  ['+_', '+_', 0],
  ['_+', '+_', 0],
  ['_+', '_', 0],
  ['+', '_', 0],
  ['_', '+', 0],
  ['1.0~rc1', '1.0~rc1', 0],
  ['1.0~rc1', '1.0', -1],
  ['1.0', '1.0~rc1', 1],
  ['1.0~rc1', '1.0~rc2', -1],
  ['1.0~rc2', '1.0~rc1', 1],
  ['1.0~rc1~git123', '1.0~rc1~git123', 0],
  ['1.0~rc1~git123', '1.0~rc1', -1],
  ['1.0~rc1', '1.0~rc1~git123', 1],
];

describe('rpmvercmp', () => {
  it.each(RPMVERCMP)('%j vs %j is %d', (a, b, expected) => {
    expect(rpmvercmp(a, b)).toBe(expected);
  });

  it('is antisymmetric and reflexive', () => {
    const version = fc.stringMatching(/^[0-9a-z.~_+]{0,8}$/);
    fc.assert(
      fc.property(version, version, (a, b) => {
        expect(rpmvercmp(a, a)).toBe(0);
        expect(rpmvercmp(a, b)).toBe(-rpmvercmp(b, a) || 0);
      }),
    );
  });
});

describe('compareRpmVersions', () => {
  it.each([
    ['0.28.0', '0.29.6', -1],
    ['0.29.6', '0.28.4', 1],
    ['0.99.0.20221129', '0.99.0.20221129', 0],
    ['1:0.1', '0.99', 1],
    ['0:1.0', '1.0', 0],
    ['1.0-1', '1.0-2', -1],
    ['1.0-10.el9', '1.0-9.el9', 1],
    ['1.0', '1.0-1', -1],
    ['1.0~beta', '1.0', -1],
  ] as const)('%s vs %s is %d', (a, b, expected) => {
    expect(compareRpmVersions(a, b)).toBe(expected);
  });
});
