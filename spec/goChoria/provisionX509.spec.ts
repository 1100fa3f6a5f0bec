import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describeRealProvisioning } from '../helpers/goChoria/provisionsRealServers';

// rxfleet provisions real go-choria servers (scripts/go-peers.conf's version) through a real
// Choria Broker, in upstream's x509 flow: each server makes a key and CSR (gencsr), the helper
// signs it with the site's CA, configure writes the certificate, the CA and the new
// configuration, restart re-executes the server, which comes back out of provisioning mode on
// the `file` security provider and answers the operator's `choria ping` with mutual TLS.
describeRealProvisioning({
  flow: 'x509',
  title: 'rxfleet provision against real go-choria servers: x509 (features.pki)',
  provider: 'file',
  expectCredentials: (server) => {
    // The CSR's key stayed on the node: the certificate the helper signed is for its identity.
    const certificate = new X509Certificate(readFileSync(`${server.dir}/ssl/certificate.pem`));
    expect(certificate.subject).toContain(`CN=${server.identity}`);
  },
});
