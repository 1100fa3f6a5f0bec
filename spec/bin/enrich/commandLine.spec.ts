import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnrichFlags, loadEnrichSettings } from '../../../bin/enrich/commandLine';
import { EnricherConfigError } from '../../../lib/enricher/config/config';

describe('rxfleet enrich settings from a file and flags', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-enrich-flags-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const problems = (flags: EnrichFlags): string[] => {
    try {
      loadEnrichSettings(flags);
      return [];
    } catch (error) {
      if (error instanceof EnricherConfigError) return error.problems;
      throw error;
    }
  };

  it('lays the flags over the file: a flag wins, the file fills in, the rest is default', () => {
    const config = file(
      'a.yaml',
      'workers: 4\nread_delay: 1s\nprojects: [web]\noutputs:\n  nats: { url: "nats://file:4222", subject_prefix: fleet }\n',
    );
    const { settings, warnings } = loadEnrichSettings({
      config,
      nats: 'nats://flag:4222',
      workers: '8',
      project: ['a', 'b'],
      dataDir: '/var/lib/x',
      http: '127.0.0.1:0',
      stdout: true,
    });
    expect(settings).toMatchObject({
      workers: 8,
      readDelay: 1000,
      projects: { mode: 'list', names: ['a', 'b'] },
      storeFile: '/var/lib/x/enricher-cold-store.json',
      http: { host: '127.0.0.1', port: 0 },
      outputs: { stdout: true, nats: { servers: ['nats://flag:4222'], subjectPrefix: 'fleet' } },
    });
    expect(warnings).toEqual([]);
    expect(loadEnrichSettings({ config, projectMarker: 'user.enrich=yes' }).settings.projects).toEqual({
      mode: 'marker',
      key: 'user.enrich',
      values: ['yes'],
    });
  });

  it('runs on flags alone, and names the file in its warnings', () => {
    expect(loadEnrichSettings({ stdout: true }).settings.outputs).toEqual({ stdout: true });
    const config = file('b.yaml', 'outputs: { stdout: true }\nlisten: ":53"\n');
    expect(loadEnrichSettings({ config }).warnings).toEqual([`${config}: listen: unknown key, ignored`]);
  });

  it('names a file that cannot be read or parsed', () => {
    expect(problems({ config: join(dir, 'missing.yaml'), stdout: true })).toEqual([
      `${join(dir, 'missing.yaml')}: cannot be read (ENOENT)`,
    ]);
    const broken = file('c.yaml', 'workers: [\n');
    expect(problems({ config: broken, stdout: true })[0]).toMatch(
      new RegExp(`^${broken}: workers: not valid YAML at line \\d+, column \\d+: `),
    );
    expect(problems({ config: file('d.yaml', '- a\n- b\n'), stdout: true })).toEqual([
      `${join(dir, 'd.yaml')}: expected a mapping of keys`,
    ]);
  });

  // Issue 14 item 3: yaml's messages quote the text; an unquoted password starting with * became
  // an "unresolved alias" named after it.
  it('names the file and key of YAML it cannot read, never quoting a secret', () => {
    const secret = file('e.yaml', 'outputs:\n  nats:\n    url: nats://b:4222\n    password: *Zq9-secret\n');
    expect(problems({ config: secret, stdout: true })).toEqual([
      `${secret}: outputs.nats.password: not valid YAML (line 4): an alias (*name) names no anchor (&name) defined before it; a value starting with * must be quoted`,
    ]);
    const bomb = file(
      'f.yaml',
      'a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
    );
    expect(problems({ config: bomb, stdout: true })).toEqual([
      `${bomb}: c: not valid YAML (line 3): too many aliases: refused as a resource exhaustion attack (an alias bomb)`,
    ]);
    const quote = file('g.yaml', 'outputs:\n  nats:\n    token: "Zq9-secret\n');
    const lines = problems({ config: quote, stdout: true });
    expect(lines[0]).toMatch(new RegExp(`^${quote}: outputs\\.nats\\.token: not valid YAML at line`));
    expect(lines.join('\n')).not.toContain('Zq9');
  });

  it('checks what the settings mean together: an output, NATS servers and TLS files, an Incus endpoint that can be built', () => {
    expect(problems({ nats: ' , ', natsCa: join(dir, 'nope.pem') })).toEqual([
      '--nats: required to publish to NATS',
      `--nats-ca: ${join(dir, 'nope.pem')} does not exist`,
    ]);
    expect(
      problems({
        stdout: true,
        incus: 'https://h',
        clientCert: join(dir, 'nope.crt'),
        clientKey: join(dir, 'nope.key'),
        serverFingerprint: 'ab'.repeat(32),
      }),
    ).toEqual([`incus: cannot read client_cert (--client-cert) from ${join(dir, 'nope.crt')}: ENOENT`]);
  });

  it("serves the instances --instance selects (repeatable, over the file's instances), and names a selector that is neither a label nor a name", () => {
    const config = file('e.yaml', 'instances: web-*\noutputs: { stdout: true }\n');
    expect(loadEnrichSettings({ config }).settings.instances).toEqual({ mode: 'match', selectors: [{ kind: 'name', pattern: 'web-*' }] });
    expect(loadEnrichSettings({ config, instance: ['user.rxfleet=1', 'db-?'] }).settings.instances).toEqual({
      mode: 'match',
      selectors: [
        { kind: 'label', key: 'user.rxfleet', values: ['1'] },
        { kind: 'name', pattern: 'db-?' },
      ],
    });
    expect(problems({ stdout: true, instance: ['=1'] })).toEqual([
      '--instance: "=1": a label needs a key before "=" (e.g. user.rxfleet=1)',
    ]);
  });
});
