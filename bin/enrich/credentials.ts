import { EnricherSettings } from '../../lib/enricher/config/config';
import { WatchedCredential } from '../../streams/credentialWatch';

/**
 * The enricher's credential files, for the credential watch: its NATS TLS files and `.creds`, and
 * the Incus client's and pinned server's certificates. Inline PEM is not a file and is left out.
 */
export function enricherCredentials(settings: EnricherSettings): WatchedCredential[] {
  const list: WatchedCredential[] = [];
  const nats = settings.outputs.nats;
  const isFile = (value: string | undefined): value is string => value !== undefined && !value.includes('-----BEGIN');
  if (isFile(nats?.tls?.cert)) list.push({ kind: 'nats_tls_certificate', file: nats.tls.cert, format: 'certificate' });
  if (isFile(nats?.tls?.ca)) list.push({ kind: 'nats_tls_ca', file: nats.tls.ca, format: 'certificate' });
  if (isFile(nats?.credentials)) list.push({ kind: 'nats_credentials', file: nats.credentials, format: 'creds' });
  const incus = settings.incus;
  if (isFile(incus.clientCert)) list.push({ kind: 'incus_client_certificate', file: incus.clientCert, format: 'certificate' });
  if (isFile(incus.serverCert)) list.push({ kind: 'incus_server_certificate', file: incus.serverCert, format: 'certificate' });
  return list;
}
