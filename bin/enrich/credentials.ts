import { EnricherSettings } from '../../lib/enricher/config/config';
import { WatchedCredential } from '../../streams/credentialWatch';

/**
 * The enricher's credential files, for the credential watch: its NATS TLS files and `.creds` (the
 * JetStream output's too, when it has its own), and
 * the Incus client's and pinned server's certificates. Inline PEM is not a file and is left out.
 */
export function enricherCredentials(settings: EnricherSettings): WatchedCredential[] {
  const list: WatchedCredential[] = [];
  const nats = settings.outputs.nats;
  const isFile = (value: string | undefined): value is string => value !== undefined && !value.includes('-----BEGIN');
  if (isFile(nats?.tls?.cert)) list.push({ kind: 'nats_tls_certificate', file: nats.tls.cert, format: 'certificate' });
  if (isFile(nats?.tls?.ca)) list.push({ kind: 'nats_tls_ca', file: nats.tls.ca, format: 'certificate' });
  if (isFile(nats?.credentials)) list.push({ kind: 'nats_credentials', file: nats.credentials, format: 'creds' });
  // The JetStream output's own files, when it has its own (inherited ones are watched once).
  const js = settings.outputs.jetstream;
  const watched = new Set(list.map((c) => c.file));
  const add = (credential: WatchedCredential): void => {
    if (!watched.has(credential.file)) list.push(credential);
    watched.add(credential.file);
  };
  if (isFile(js?.tls?.cert)) add({ kind: 'jetstream_tls_certificate', file: js.tls.cert, format: 'certificate' });
  if (isFile(js?.tls?.ca)) add({ kind: 'jetstream_tls_ca', file: js.tls.ca, format: 'certificate' });
  if (isFile(js?.credentials)) add({ kind: 'jetstream_credentials', file: js.credentials, format: 'creds' });
  const incus = settings.incus;
  if (isFile(incus.clientCert)) list.push({ kind: 'incus_client_certificate', file: incus.clientCert, format: 'certificate' });
  if (isFile(incus.serverCert)) list.push({ kind: 'incus_server_certificate', file: incus.serverCert, format: 'certificate' });
  return list;
}
