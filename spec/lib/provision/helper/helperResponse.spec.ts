import { HelperOutputError, decodeHelperResponse } from '../../../../lib/provision/helper/helperResponse';

const empty = {
  defer: false,
  shutdown: false,
  msg: '',
  configuration: {},
  actionPolicies: {},
  opaPolicies: {},
  certificate: '',
  ca: '',
  key: '',
  ssldir: '',
  serverClaims: undefined,
  upgrade: '',
};

describe('decodeHelperResponse (ConfigResponse)', () => {
  it('reads every field of the table', () => {
    const response = decodeHelperResponse(
      JSON.stringify({
        defer: false,
        shutdown: true,
        msg: 'bye',
        configuration: { identity: 'n1', 'plugin.choria.server.provision': 'false' },
        action_policies: { 'rpcutil.policy': 'policy default allow' },
        opa_policies: { 'default.rego': 'package x' },
        certificate: 'CERT',
        ca: 'CA',
        key: 'KEY',
        ssldir: '/ssl',
        server_claims: {
          ou: 'acme',
          exp: 2_000_000_000,
          collectives: ['c'],
          pub_subjects: ['p.>'],
          permissions: { streams: true, service_host: false },
          identity: 'ignored',
          iss: 'ignored',
        },
        upgrade: '0.29.0',
      }),
    );
    expect(response).toEqual({
      defer: false,
      shutdown: true,
      msg: 'bye',
      configuration: { identity: 'n1', 'plugin.choria.server.provision': 'false' },
      actionPolicies: { 'rpcutil.policy': 'policy default allow' },
      opaPolicies: { 'default.rego': 'package x' },
      certificate: 'CERT',
      ca: 'CA',
      key: 'KEY',
      ssldir: '/ssl',
      serverClaims: {
        ou: 'acme',
        exp: 2_000_000_000,
        collectives: ['c'],
        pub_subjects: ['p.>'],
        permissions: { streams: true, service_host: false },
      },
      upgrade: '0.29.0',
    });
  });

  it('matches keys case-insensitively, as Go, ignores unknown keys and treats null as absent', () => {
    expect(
      decodeHelperResponse('{"Defer": true, "MSG": "later", "Configuration": {"Identity": "kept as is"}, "unknown": [1], "ca": null}'),
    ).toEqual({ ...empty, defer: true, msg: 'later', configuration: { Identity: 'kept as is' } });
  });

  it('null as the whole document and an empty object are empty responses', () => {
    expect(decodeHelperResponse('null')).toEqual(empty);
    expect(decodeHelperResponse('{}')).toEqual(empty);
  });

  it('a key such as "constructor" or "__proto__" is just an unknown key, and stays a key inside maps', () => {
    expect(
      decodeHelperResponse('{"constructor": 1, "__proto__": {"defer": true}, "configuration": {"__proto__": "x"}}').configuration,
    ).toEqual(Object.assign(Object.create(null), { ['__proto__']: 'x' }));
  });

  it.each([
    ['{"defer": "yes"}', 'json: cannot unmarshal string into field defer of type bool'],
    ['{"msg": 5}', 'json: cannot unmarshal number into field msg of type string'],
    ['{"configuration": {"workers": 4}}', 'json: cannot unmarshal number into field configuration.workers of type string'],
    ['{"configuration": ["a"]}', 'json: cannot unmarshal array into field configuration of type map[string]string'],
    ['{"server_claims": {"exp": "soon"}}', 'json: cannot unmarshal string into field server_claims.exp of type number'],
    [
      '{"server_claims": {"permissions": {"streams": 1}}}',
      'json: cannot unmarshal number into field server_claims.permissions.streams of type bool',
    ],
    ['{"server_claims": {"collectives": "c"}}', 'json: cannot unmarshal string into field server_claims.collectives of type []string'],
    ['[1, 2]', 'json: cannot unmarshal array into the helper response (expected an object)'],
    ['"text"', 'json: cannot unmarshal string into the helper response (expected an object)'],
  ])('refuses %s', (text, message) => {
    expect(() => decodeHelperResponse(text)).toThrow(new HelperOutputError(message));
  });

  it("refuses text that is not JSON with the parser's reason", () => {
    expect(() => decodeHelperResponse('{"defer": fal')).toThrow(HelperOutputError);
  });
});
