import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ProvisioningFlow, expectEveryServerProvisioned, useRealSite } from '../helpers/goChoria/provisionsRealServers';

const SERVERS = 20;

// rxfleet provisions real go-choria servers (scripts/go-peers.conf's version) through a real
// Choria Broker, in upstream's x509 flow: each server makes a key and CSR (gencsr), the helper
// signs it with the site's CA, configure writes the certificate, the CA and the new
// configuration, restart re-executes the server, which comes back out of provisioning mode on
// the `file` security provider and answers the operator's `choria ping` with mutual TLS.
const FLOW: ProvisioningFlow = {
  flow: 'x509',
  provider: 'file',
  expectCredentials: (server) => {
    // The CSR's key stayed on the node: the certificate the helper signed is for its identity.
    const certificate = new X509Certificate(readFileSync(`${server.dir}/ssl/certificate.pem`));
    expect(certificate.subject).toContain(`CN=${server.identity}`);
  },
};

describe('rxfleet provision against real go-choria servers: x509 (features.pki)', () => {
  const real = useRealSite(FLOW.flow, SERVERS);

  it(
    `configures all ${SERVERS} servers, which go-choria's client then finds as configured servers`,
    () => expectEveryServerProvisioned(real, FLOW),
    120_000,
  );
});
