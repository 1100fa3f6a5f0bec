import { X509Certificate } from 'node:crypto';
import { Registry } from 'prom-client';
import { CredentialWatch, isRefusal } from '../../streams/credentialWatch';
import { clientCredentials, organisationIssuer } from '../helpers/choriaSite';
import { createTestCa } from '../helpers/testCa';

const DAY = 86_400_000;

/** A logger that keeps its lines. */
function recorder() {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (fields: unknown, msg?: string): void =>
      void lines.push(
        typeof fields === 'string'
          ? { level, msg: fields, fields: {} }
          : { level, msg: msg ?? '', fields: fields as Record<string, unknown> },
      );
  const logger = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'), fatal: at('fatal'), trace: at('trace') };
  return { lines, logger: logger as never };
}

describe('CredentialWatch', () => {
  it('logs each credential once, then each change, without the secret; warns 14 days ahead and once expired; exports the expiry', async () => {
    const ca = await createTestCa();
    const now = Date.now();
    const soon = await ca.issue('prov.mcollective', { notAfter: new Date(now + 10 * DAY) });
    const later = await ca.issue('prov.mcollective', { notAfter: new Date(now + 40 * DAY) });
    const disk = new Map<string, string>([
      ['/c.pem', later.cert],
      ['/k.pem', later.key],
    ]);
    const files = { read: (p: string) => Buffer.from(disk.get(p) ?? ''), exists: (p: string) => disk.has(p) };
    const registry = new Registry();
    const { lines, logger } = recorder();
    let clock = now;
    const watch = new CredentialWatch({
      credentials: [
        { kind: 'tls_certificate', file: '/c.pem', format: 'certificate' },
        { kind: 'tls_key', file: '/k.pem', format: 'secret' },
      ],
      files,
      logger,
      registry,
      now: () => clock,
    });
    watch.attempt();
    watch.attempt();
    expect(lines.map((l) => l.level)).toEqual(['info', 'info']);
    expect(lines[0].fields.fingerprint).toBe(new X509Certificate(later.cert).fingerprint256);
    const gauge = async (): Promise<number | undefined> =>
      (await registry.getSingleMetric('rxfleet_credential_expiry_timestamp_seconds')?.get())?.values.find(
        (v) => v.labels.kind === 'tls_certificate',
      )?.value;
    expect(await gauge()).toBe(Math.floor(Date.parse(new X509Certificate(later.cert).validTo) / 1000));

    disk.set('/c.pem', soon.cert);
    watch.attempt();
    expect(lines.slice(2).map((l) => `${l.level} ${l.msg}`)).toEqual([
      expect.stringMatching(/^info tls_certificate credential \/c.pem changed on disk: fingerprint /),
      expect.stringMatching(/^warn tls_certificate credential \/c.pem expires in 10d /),
    ]);
    watch.attempt();
    expect(lines).toHaveLength(4);

    clock = now + 11 * DAY;
    watch.disconnected();
    watch.attempt();
    expect(lines.at(-1)?.msg).toMatch(/^tls_certificate credential \/c.pem expired at /);
    watch.refused('Authorization Violation');
    expect(watch.problem()).toMatch(
      /^the broker refused the connection \(Authorization Violation\): the tls_certificate credential \/c.pem expired at /,
    );
    watch.connected();
    expect(watch.problem()).toBeUndefined();
    expect(JSON.stringify(lines)).not.toContain('PRIVATE KEY');
  });

  it("a token's expiry is its exp; an unreadable file is one warn line per new problem and named by problem()", async () => {
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 3 * DAY);
    const { token } = await clientCredentials(organisationIssuer(), { expiresAt });
    const disk = new Map<string, string>([['/t.jwt', token]]);
    const files = {
      read: (p: string) => {
        const text = disk.get(p);
        if (text === undefined) throw new Error('ENOENT: no such file');
        return Buffer.from(text);
      },
      exists: (p: string) => disk.has(p),
    };
    const { lines, logger } = recorder();
    const watch = new CredentialWatch({ credentials: [{ kind: 'choria_token', file: '/t.jwt', format: 'token' }], files, logger });
    watch.check();
    expect(lines[0].fields.expires).toBe(expiresAt.toISOString());
    expect(JSON.stringify(lines)).not.toContain(token);
    disk.delete('/t.jwt');
    watch.check();
    watch.check();
    expect(lines.filter((l) => l.msg.startsWith('cannot read'))).toHaveLength(1);
    expect(watch.problem()).toBe(
      'not connected, and the choria_token credential /t.jwt cannot be read: ENOENT: no such file: the broker will refuse it',
    );
  });

  it('tells a refusal from an unreachable broker', () => {
    expect(isRefusal("'Authorization Violation'")).toBe(true);
    expect(isRefusal('certificate has expired')).toBe(true);
    expect(isRefusal('connect ECONNREFUSED 127.0.0.1:4222')).toBe(false);
  });
});
