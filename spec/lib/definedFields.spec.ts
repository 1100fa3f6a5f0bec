import { definedFields } from '../../lib/definedFields';

describe('definedFields', () => {
  it('leaves out the fields whose value is undefined, keeping the others (null, 0, false and "" included) in order', () => {
    const out = definedFields({ a: 1, b: undefined, c: null, d: 0, e: false, f: '', g: 'x' });
    expect(out).toStrictEqual({ a: 1, c: null, d: 0, e: false, f: '', g: 'x' });
    expect(Object.keys(out)).toEqual(['a', 'c', 'd', 'e', 'f', 'g']);
    expect('b' in out).toBe(false);
  });

  it('spread over defaults, keeps a default where the value is undefined, as the spread it replaces does', () => {
    const user: string | undefined = undefined;
    const pass: string | undefined = 'secret';
    expect({ user: 'provisioner', pass: '', ...definedFields({ user, pass }) }).toStrictEqual({ user: 'provisioner', pass: 'secret' });
    const defaults = { user: 'provisioner' };
    expect({ ...defaults, ...{ user } }).toStrictEqual({ user: undefined });
  });

  it('makes a new object and leaves the one given alone', () => {
    const fields = { a: 1, b: undefined };
    const out = definedFields(fields);
    expect(out).not.toBe(fields);
    expect(fields).toStrictEqual({ a: 1, b: undefined });
  });
});
