import { DEFAULT_IDENTITY_TEMPLATE, IdentityTemplateError, parseIdentityTemplate } from '../../../../lib/provision/sightings/incusIdentity';

const source = { name: 'web1', project: 'p2', config: { 'user.choria-identity': 'web1.example.net', 'user.dc': 'ams' } };

describe('parseIdentityTemplate', () => {
  it('fills {name}, {project} and {config.KEY}; the default is the instance name', () => {
    expect(parseIdentityTemplate(DEFAULT_IDENTITY_TEMPLATE).fill(source)).toEqual({ ok: true, identity: 'web1' });
    expect(parseIdentityTemplate('{name}.{project}.example.net').fill(source)).toEqual({ ok: true, identity: 'web1.p2.example.net' });
    expect(parseIdentityTemplate('{config.user.choria-identity}').fill(source)).toEqual({ ok: true, identity: 'web1.example.net' });
    expect(parseIdentityTemplate('{ name }.{config.user.dc}.example.net').fill(source)).toEqual({
      ok: true,
      identity: 'web1.ams.example.net',
    });
    expect(parseIdentityTemplate('{config.user.dc}-{name}').configKeys).toEqual(['user.dc']);
  });

  it('says why an instance maps to no identity: a key not set, or a result no Choria identity can be', () => {
    expect(parseIdentityTemplate('{config.user.missing}').fill(source)).toEqual({
      ok: false,
      reason: 'its configuration has no user.missing',
    });
    expect(parseIdentityTemplate('{config.user.x}').fill({ ...source, config: { 'user.x': '' } })).toEqual({
      ok: false,
      reason: 'its configuration has no user.x',
    });
    for (const value of ['a b', 'a.*', '.a', 'a.', 'a..b', 'a>']) {
      const result = parseIdentityTemplate('{config.user.x}').fill({ ...source, config: { 'user.x': value } });
      expect(result.ok).toBe(false);
    }
  });

  it('refuses a template it cannot use, naming the fault', () => {
    const refused = (text: string): string => {
      try {
        parseIdentityTemplate(text);
      } catch (error) {
        expect(error).toBeInstanceOf(IdentityTemplateError);
        return (error as Error).message;
      }
      throw new Error(`${text} was accepted`);
    };
    expect(refused('')).toMatch(/empty template/);
    expect(refused('{nam}')).toBe('unknown placeholder {nam}: use {name}, {project} or {config.KEY}');
    expect(refused('{config.}')).toMatch(/unknown placeholder/);
    expect(refused('{name')).toBe('"{" without "}" at character 1');
    expect(refused('name}')).toBe('"}" without "{" at character 5');
    expect(refused('{name} x')).toMatch(/no white space/);
    expect(refused('*.{name}')).toMatch(/no white space/);
  });
});
