import { buildHelperInput, encodeHelperInput, stringifySorted } from '../../../../lib/provision/helper/helperInput';
import { isStaleSighting, staleSightingError } from '../../../../lib/provision/sightings/staleSighting';

describe('buildHelperInput (the Host JSON of §3.1)', () => {
  it('a node with nothing but an identity: null parts and an empty inventory string', () => {
    const input = buildHelperInput({ identity: 'n1.example.net' });
    expect(encodeHelperInput(input)).toBe('{"identity":"n1.example.net","csr":null,"ed25519_pubkey":null,"inventory":"","jwt":null}');
  });

  it("carries the inventory as a JSON string with Go's sorted keys, and every part in upstream's order", () => {
    const input = buildHelperInput({
      identity: 'n1',
      csr: { csr: 'PEM', public_key: 'PUB', ssldir: '/etc/choria/ssl' },
      ed25519: { public_key: 'ab', directory: '/etc/choria', signature: 'cd' },
      inventory: { version: '0.29.0', agents: ['rpcutil', 'choria_provision'], facts: { z: 1, a: { y: true, b: null } }, upgradable: true },
      jwt: { cht: 's3cret', chs: false, chpd: true, extensions: null, ou: 'choria', purpose: 'choria_provisioning' },
    });
    expect(Object.keys(input)).toEqual(['identity', 'csr', 'ed25519_pubkey', 'inventory', 'jwt']);
    expect(input.inventory).toBe(
      '{"agents":["rpcutil","choria_provision"],"facts":{"a":{"b":null,"y":true},"z":1},"upgradable":true,"version":"0.29.0"}',
    );
    const decoded = JSON.parse(encodeHelperInput(input));
    expect(JSON.parse(decoded.inventory)).toEqual({
      version: '0.29.0',
      agents: ['rpcutil', 'choria_provision'],
      facts: { z: 1, a: { y: true, b: null } },
      upgradable: true,
    });
    expect(decoded.csr).toEqual({ csr: 'PEM', public_key: 'PUB', ssldir: '/etc/choria/ssl' });
    expect(decoded.ed25519_pubkey).toEqual({ public_key: 'ab', directory: '/etc/choria', signature: 'cd' });
    expect(decoded.jwt.cht).toBe('s3cret');
  });

  it('passes an inventory already in JSON text through untouched', () => {
    expect(buildHelperInput({ identity: 'n1', inventory: '{"b":1,"a":2}' }).inventory).toBe('{"b":1,"a":2}');
  });
});

describe('stringifySorted', () => {
  it('sorts integer-like keys as strings, like Go, where JSON.stringify would put them first', () => {
    expect(stringifySorted({ b: 1, 10: 'x', 2: 'y', a: [{ d: 1, c: undefined }, undefined] })).toBe(
      '{"10":"x","2":"y","a":[{"d":1},null],"b":1}',
    );
  });

  it('agrees with JSON.parse on anything JSON can hold', () => {
    const value = { s: 'é"\n', n: -1.5e-7, t: true, f: false, z: null, nested: [[], {}, [1, [2]]] };
    expect(JSON.parse(stringifySorted(value))).toEqual(value);
  });
});

describe('the stale-sighting rule (#167)', () => {
  const interval = 60_000;

  it('a sighting up to twice the interval old is fresh; older is stale', () => {
    expect(isStaleSighting(0, 2 * interval, interval)).toBe(false);
    expect(isStaleSighting(0, 2 * interval + 1, interval)).toBe(true);
    expect(isStaleSighting(5_000, 5_000, interval)).toBe(false);
  });

  it("says how long the node waited, in Go's duration format", () => {
    expect(staleSightingError(0, 123_500, interval)).toBe("skipping node that's been waiting 2m3.5s");
    expect(staleSightingError(0, 60_000, interval)).toBeUndefined();
  });
});
