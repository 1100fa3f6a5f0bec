import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';

// `--help` of every command, from the built bin (`npm test` builds first): one option vocabulary,
// spelled, described and read from the environment the same way wherever it appears.
const run = promisify(execFile);
const COMMANDS = ['demo', 'validate', 'simulate', 'enrich', 'events', 'provision', 'provision-incus'] as const;

/** One option as `--help` shows it: its flags, its value placeholder, its whole description. */
interface HelpOption {
  flags: string;
  long: string;
  placeholder: string | undefined;
  description: string;
}

interface Help {
  usage: string;
  options: HelpOption[];
}

async function help(command: string): Promise<Help> {
  const { stdout } = await run(process.execPath, [RXFLEET_BIN, command, '--help'], { env: { ...process.env, COLUMNS: '100' } });
  const lines = stdout.split('\n');
  const usage = lines[0];
  const start = lines.indexOf('Options:');
  const options: HelpOption[] = [];
  for (const line of lines.slice(start + 1)) {
    const entry = /^ {2}(-\S.*?)(?: {2,}(.*))?$/.exec(line);
    if (entry !== null) {
      const flags = entry[1].trim();
      const long = /--[a-z-]+/.exec(flags)?.[0] ?? flags;
      options.push({ flags, long, placeholder: /<([^>]+)>/.exec(flags)?.[1], description: (entry[2] ?? '').trim() });
    } else if (/^ {4,}\S/.test(line) && options.length > 0) {
      options[options.length - 1].description += ` ${line.trim()}`;
    }
  }
  return { usage, options };
}

const helps = new Map<string, Help>();
beforeAll(async () => {
  for (const command of COMMANDS) helps.set(command, await help(command));
}, 60_000);

const everyOption = (): Array<[string, HelpOption]> =>
  [...helps].flatMap(([command, h]) => h.options.map((o): [string, HelpOption] => [command, o]));

/** The shared options of bin/options.ts: the same words on every command that has them. */
const SHARED = [
  '--log-level',
  '--log-format',
  '--debug',
  '--pretty',
  '--nats',
  '--nats-user',
  '--nats-password',
  '--nats-token',
  '--nats-creds',
  '--nats-ca',
  '--nats-cert',
  '--nats-key',
  '--monitor',
  '--config',
];

describe('rxfleet <command> --help', () => {
  it('every command takes the logging options; the daemons and simulate the NATS ones', () => {
    for (const command of COMMANDS) {
      const longs = helps.get(command)?.options.map((o) => o.long) ?? [];
      if (command !== 'validate') expect(longs).toEqual(expect.arrayContaining(['--log-level', '--log-format', '--debug', '--pretty']));
      if (command !== 'demo') expect(longs).toEqual(expect.arrayContaining(['--nats', '--nats-user', '--nats-password', '--nats-creds']));
    }
    for (const command of ['enrich', 'provision', 'provision-incus', 'validate'])
      expect(helps.get(command)?.options.map((o) => o.long)).toContain('--monitor');
  });

  it("provision-incus takes every flag of provision, and the enricher's server, cold store and configuration in the words enrich uses", () => {
    const options = (command: string): HelpOption[] => helps.get(command)?.options ?? [];
    const longs = options('provision-incus').map((o) => o.long);
    // But the dry run's (P23), which rehearses the provisioner alone.
    const rehearsal = ['--dry-run', '--limit', '--json'];
    expect(longs).toEqual(
      expect.arrayContaining(
        options('provision')
          .map((o) => o.long)
          .filter((long) => !rehearsal.includes(long)),
      ),
    );
    expect(longs).not.toContain('--dry-run');
    expect(helps.get('provision-incus')?.usage).toBe('Usage: rxfleet provision-incus --config <file> [options]');
    expect(longs).toContain('--enrich-config');
    for (const long of ['--incus', '--client-cert', '--client-key', '--server-cert', '--server-fingerprint', '--data-dir']) {
      const here = options('provision-incus').find((o) => o.long === long);
      expect(here).toEqual(options('enrich').find((o) => o.long === long));
    }
  });

  it("keeps upstream's own flags on provision", () => {
    const longs = helps.get('provision')?.options.map((o) => o.long);
    expect(longs).toEqual(expect.arrayContaining(['--config', '--choria-config', '--pid', '--debug']));
    expect(helps.get('provision')?.usage).toBe('Usage: rxfleet provision|run --config <file> [options]');
  });

  it.each(SHARED.filter((o) => o !== '--config'))('%s: one spelling, description and environment variable wherever it appears', (long) => {
    const seen = everyOption().filter(([, o]) => o.long === long);
    expect(seen.length).toBeGreaterThan(0);
    // The default may differ by command (a daemon logs at info, a tool at warn); nothing else may.
    const shape = (o: HelpOption): string => `${o.flags} ${o.description.replace(/\(default: [^)]*\)/, '(default: …)')}`;
    expect(new Set(seen.map(([, o]) => shape(o))).size).toBe(1);
    const env = /env: (RXFLEET_[A-Z_]+)/.exec(seen[0][1].description)?.[1];
    // The short forms (--debug, --pretty) are switches; their long forms have the variables.
    const expected = ['--debug', '--pretty'].includes(long)
      ? undefined
      : `RXFLEET_${long
          .slice(2)
          .replace(/-/g, '_')
          .toUpperCase()
          .replace(/^NATS$/, 'NATS_URL')}`;
    expect(env).toBe(expected);
  });

  it('writes every default as (default: X), never another way', () => {
    for (const [command, o] of everyOption()) {
      expect(`${command} ${o.long}: ${o.description}`).not.toMatch(/\(default [^:]/);
      expect(`${command} ${o.long}: ${o.description}`).not.toMatch(/\(defaults? to/);
    }
  });

  it('marks required options, and puts them in the usage line', () => {
    const required: Array<[string, string]> = [
      ['validate', '--config'],
      ['provision', '--config'],
      ['provision-incus', '--config'],
      ['simulate', '--nodes'],
    ];
    for (const [command, long] of required) {
      const option = helps.get(command)?.options.find((o) => o.long === long);
      expect(option?.description).toMatch(/\(required\)/);
      expect(helps.get(command)?.usage).toContain(long);
    }
    const marked = everyOption()
      .filter(([, o]) => o.description.includes('(required)'))
      .map(([command, o]) => `${command} ${o.long}`);
    expect(marked.sort()).toEqual(required.map(([c, l]) => `${c} ${l}`).sort());
  });

  it('takes every duration with its unit: a <duration> placeholder, and defaults written with units', () => {
    for (const [command, o] of everyOption()) {
      // No value in bare milliseconds or seconds.
      expect(`${command} ${o.flags}`).not.toMatch(/<(ms|s|seconds)>/);
      if (o.placeholder !== 'duration') continue;
      const fallback = /\(default: ([^);]*)/.exec(o.description)?.[1];
      if (fallback !== undefined && /^\d/.test(fallback))
        expect(`${command} ${o.long}: ${fallback}`).toMatch(/: (0|\d+(\.\d+)?(ms|s|m|h)\S*)( |$)/);
    }
    expect(everyOption().filter(([, o]) => o.placeholder === 'duration').length).toBeGreaterThan(10);
  });

  it('lists every command at the top level', async () => {
    const { stdout } = await run(process.execPath, [RXFLEET_BIN, '--help']);
    for (const command of ['demo', 'validate', 'simulate', 'enrich', 'events', 'provision|run', 'provision-incus'])
      expect(stdout).toMatch(new RegExp(`^  ${command.replace('|', '\\|')} `, 'm'));
  });
});
