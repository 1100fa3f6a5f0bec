import { fipsMode } from '../../../streams/choria/fipsMode';
import { callerHash, replySubject } from '../../../lib/choria/protocol/subjects';
import { readClientToken } from '../../../lib/choria/clientToken';

describe("fipsMode: go-choria's crypto/fips140.Enabled(), read where a site sets it", () => {
  it('GODEBUG fips140=on or only, among other settings, means SHA-256; off, absent or another setting means MD5', () => {
    const off = () => 0;
    expect(fipsMode({ GODEBUG: 'fips140=on' }, off)).toEqual({ on: true, reason: 'GODEBUG=fips140=on', callerHash: 'sha256' });
    expect(fipsMode({ GODEBUG: 'http2client=0, fips140=only' }, off)).toMatchObject({ on: true, callerHash: 'sha256' });
    for (const GODEBUG of [undefined, '', 'fips140=off', 'fips140=debug', 'xfips140=on'])
      expect(fipsMode({ GODEBUG }, off)).toEqual({ on: false, callerHash: 'md5' });
  });

  it("Node's own FIPS mode means SHA-256 too (MD5 is not even there then)", () => {
    expect(fipsMode({}, () => 1)).toEqual({ on: true, reason: "Node's FIPS mode", callerHash: 'sha256' });
  });

  it('names replies and token inboxes as go-choria 0.30 does in each mode', () => {
    // The hashes of go-choria's own broker spec (choria_auth_test.go), for the caller ginkgo.example.net.
    expect(callerHash('ginkgo.example.net', 'md5')).toBe('3f7c3a791b0eb10da51dca4cdedb9418');
    expect(callerHash('ginkgo.example.net', 'sha256')).toBe('d20fc1727ae10ccda51352aef09b2ffcbacb1a8a29236eac3eb7e1f66bfd8c57');
    expect(replySubject('provisioning', 'ginkgo.example.net', 'r1', 'sha256')).toBe(
      'provisioning.reply.d20fc1727ae10ccda51352aef09b2ffcbacb1a8a29236eac3eb7e1f66bfd8c57.r1',
    );
    const token = `e30.${Buffer.from(JSON.stringify({ purpose: 'choria_client_id', callerid: 'ginkgo.example.net' })).toString('base64url')}.c2ln`;
    expect(readClientToken(token, 'sha256').uniqueId).toBe('d20fc1727ae10ccda51352aef09b2ffcbacb1a8a29236eac3eb7e1f66bfd8c57');
    expect(readClientToken(token).uniqueId).toBe('3f7c3a791b0eb10da51dca4cdedb9418');
  });
});
