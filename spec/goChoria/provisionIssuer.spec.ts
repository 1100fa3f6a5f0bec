import { readFileSync } from 'node:fs';
import { ProvisioningFlow, expectEveryServerProvisioned, useRealSite } from '../helpers/goChoria/provisionsRealServers';

const SERVERS = 20;

// rxfleet provisions real go-choria servers through a real Choria Broker with an organisation
// issuer: the servers' provisioning JWT (signed by the issuer, protocol v2, `chs` set) lets them
// into the broker's provisioning account; rxfleet logs in with its client JWT and the nonce
// signed with its seed, fetches and verifies each server's JWT, has it make an ed25519 key
// (gen25519), signs the server's JWT in a chain with jwt_signing_key and jwt_signing_token, and
// configures it for the `choria` security provider. Restarted, each server logs in with that JWT
// and answers the operator's `choria ping`, whose client JWT the same issuer signed.
const FLOW: ProvisioningFlow = {
  flow: 'issuer',
  provider: 'choria',
  expectCredentials: (server) => {
    // The server JWT rxfleet signed, in the chain its jwt_signing_token starts, for this identity.
    const claims = JSON.parse(Buffer.from(readFileSync(`${server.dir}/server.jwt`, 'utf8').split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ purpose: 'choria_server', identity: server.identity });
    expect(String(claims.iss)).toMatch(/^C-/);
  },
};

describe('rxfleet provision against real go-choria servers: organisation issuer (features.ed25519, servers whose provisioning JWT sets chs)', () => {
  const real = useRealSite(FLOW.flow, SERVERS);

  it(
    `configures all ${SERVERS} servers, which go-choria's client then finds as configured servers`,
    () => expectEveryServerProvisioned(real, FLOW),
    120_000,
  );
});
