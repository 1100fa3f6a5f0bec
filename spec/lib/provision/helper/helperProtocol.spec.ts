import { buildHelperInput } from '../../../../lib/provision/helper/helperInput';
import { decodeHelperAnswer, encodeHelperRequest } from '../../../../lib/provision/helper/helperProtocol';

describe('the persistent helper protocol', () => {
  it('a request is the per-node input with the id first, compact, on one line', () => {
    const input = buildHelperInput({ identity: 'n1.example.net', inventory: { facts: { note: 'two\nlines' }, version: '0.29.4' } });
    const line = encodeHelperRequest('42', input);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(line.startsWith('{"id":"42","identity":"n1.example.net","csr":null,')).toBe(true);
    expect(JSON.parse(line)).toEqual({ id: '42', ...input });
  });

  it('an answer is the per-node output with the id, decoded by the per-node rules', () => {
    expect(decodeHelperAnswer('{"id":"7","Defer":true,"msg":"later","unknown":1}')).toEqual({
      kind: 'answer',
      id: '7',
      response: expect.objectContaining({ defer: true, msg: 'later' }),
    });
    expect(decodeHelperAnswer('{"id":"7","configuration":{"a":5}}')).toMatchObject({
      kind: 'undecodable',
      id: '7',
      error: { message: 'json: cannot unmarshal number into field configuration.a of type string' },
    });
  });

  it('a line that cannot be tied to a request is a violation; a blank line is nothing', () => {
    expect(decodeHelperAnswer('   ')).toEqual({ kind: 'blank' });
    expect(decodeHelperAnswer('nope')).toMatchObject({ kind: 'violation', reason: expect.stringMatching(/^not JSON/) });
    expect(decodeHelperAnswer('[1]')).toMatchObject({ kind: 'violation', reason: expect.stringMatching(/^not a JSON object/) });
    expect(decodeHelperAnswer('null')).toMatchObject({ kind: 'violation' });
    expect(decodeHelperAnswer('{"id":7}')).toMatchObject({ kind: 'violation', reason: expect.stringMatching(/^no string "id"/) });
    expect(decodeHelperAnswer(`{"id":7,"msg":"${'x'.repeat(200)}"}`)).toMatchObject({ reason: expect.stringMatching(/\.\.\."$/) });
  });
});
