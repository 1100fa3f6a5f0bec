import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { Subject } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { defaultEnricherSettings } from '../../../lib/enricher/config/config';
import { EnrichDaemon, startEnrichDaemon } from '../../../bin/enrich/daemon';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';
import { FakeIncus } from '../../helpers/FakeIncus';
import { SiteDir, siteDir } from '../../helpers/choriaSite';
import { TestCa, createTestCa } from '../../helpers/testCa';
import { waitFor } from '../../helpers/waitFor';
import { httpGet, lineSink, metricValue } from './daemonRig';

// The enricher's NATS TLS files are read again at every reconnection, as the provisioner's: a CA
// and client certificate rotated on disk, and a broker restarted trusting only the new CA, need no
// restart of the enricher. The certificate's expiry is exported and its change logged.
describe('rxfleet enrich across a rotated NATS CA and client certificate', () => {
  let site: SiteDir;
  let broker: NatsServerProcess | undefined;
  let daemon: EnrichDaemon | undefined;
  beforeAll(() => {
    site = siteDir('rxfleet-enrich-tls-');
  });
  afterAll(async () => {
    await daemon?.stop();
    await broker?.stop();
    site.remove();
  });

  const issue = async (ca: TestCa, days: number): Promise<void> => {
    const brokerCert = await ca.issue('broker.example.net', { dns: ['localhost'], ip: ['127.0.0.1'] });
    site.file('broker.pem', brokerCert.cert);
    site.file('broker-key.pem', brokerCert.key);
    const client = await ca.issue('enricher.example.net', { notAfter: new Date(Date.now() + days * 86_400_000) });
    site.file('client.pem', client.cert);
    site.file('client-key.pem', client.key);
    site.file('ca.pem', ca.cert);
  };

  it('reconnects with the new files and exports the new expiry', async () => {
    await issue(await createTestCa('old CA'), 1);
    broker = await startNatsServer({
      jetstream: false,
      config: `tls {\n  cert_file: "${site.path}/broker.pem"\n  key_file: "${site.path}/broker-key.pem"\n  ca_file: "${site.path}/ca.pem"\n  verify: true\n}\n`,
    });
    const settings = defaultEnricherSettings({
      storeFile: undefined,
      http: { host: '127.0.0.1', port: 0 },
      readDelay: 0,
      sweepInterval: 3_600_000,
      outputs: {
        stdout: false,
        nats: {
          servers: [broker.url],
          subjectPrefix: 'incus.events',
          name: 'spec',
          maxHeld: 100,
          tls: { ca: `${site.path}/ca.pem`, cert: `${site.path}/client.pem`, key: `${site.path}/client-key.pem` },
        },
      },
    });
    const log = lineSink();
    daemon = await startEnrichDaemon(settings, {
      reader: new FakeIncus().asPromiseReader(),
      events$: new Subject<IncusStreamItem>(),
      logger: pino({ level: 'info' }, log.stream),
    });
    const nats = async (): Promise<unknown> =>
      (JSON.parse((await httpGet(daemon?.port as number, '/health')).body) as { nats: unknown }).nats;
    await waitFor(async () => (await nats()) === 'connected', 'connected with the old files', 20_000);

    await issue(await createTestCa('new CA'), 5);
    await broker.kill();
    await waitFor(async () => (await nats()) !== 'connected', 'the outage');
    await broker.restart();
    await waitFor(async () => (await nats()) === 'connected', 'reconnected with the new files', 20_000);
    const expiry = Math.floor(Date.parse(new X509Certificate(readFileSync(`${site.path}/client.pem`)).validTo) / 1000);
    expect(await metricValue(daemon.registry, 'rxfleet_credential_expiry_timestamp_seconds', { kind: 'nats_tls_certificate' })).toBe(
      expiry,
    );
    const lines = log.lines.map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(lines.some((l) => l.kind === 'nats_tls_certificate' && /changed on disk/.test(String(l.msg)))).toBe(true);
  }, 60_000);
});
