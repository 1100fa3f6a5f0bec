import { build } from 'esbuild';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { dependencyRewrites } from '../../../scripts/package/dependencyRewrites';
import { NatsServerProcess, startNatsServer } from '../../../streams/natsServerProcess';

// What the bundles change in their dependencies (scripts/package/dependencyRewrites.ts), each
// bundled here as the build does, beside the module as node_modules has it.
const execFileAsync = promisify(execFile);
const root = resolve(__dirname, '../../..');
const PARSER = join(root, 'node_modules/@nats-io/nats-core/lib/parser.js');
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rxfleet-rewrites-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `contents` bundled as the CLI's bundles are, with the rewrites or without; the CommonJS text. */
async function bundled(contents: string, rewrites: boolean, resolveDir = root): Promise<string> {
  const result = await build({
    stdin: { contents, resolveDir, loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    logLevel: 'silent',
    plugins: rewrites ? [dependencyRewrites()] : [],
  });
  return result.outputFiles[0].text;
}

interface ParserModule {
  Parser: new (dispatcher: { push(event: { kind: number; msg?: Record<string, unknown>; data?: Uint8Array }): void }) => {
    parse(buf: Uint8Array): void;
  };
}

/** What a parser made of `chunks`: each event as text, or the error it threw. */
function parsed({ Parser }: ParserModule, chunks: Uint8Array[]): string[] {
  const text = (bytes: unknown): string => (bytes instanceof Uint8Array ? Buffer.from(bytes).toString('latin1') : String(bytes));
  const events: string[] = [];
  const parser = new Parser({
    push: ({ kind, msg, data }) =>
      void events.push(JSON.stringify([kind, msg && [text(msg.subject), text(msg.reply), msg.sid, msg.size, msg.hdr], data && text(data)])),
  });
  try {
    for (const chunk of chunks) parser.parse(chunk);
  } catch (error) {
    events.push(`threw ${(error as Error).message}`);
  }
  return events;
}

const headers = 'NATS/1.0\r\nKV-Operation: DEL\r\n\r\n';
const WIRE = [
  'INFO {"server_id":"S","max_payload":1048576}\r\n',
  '+OK\r\n',
  'PING\r\n',
  'PONG\r\n',
  'MSG a.b 1 5\r\nhello\r\n',
  'msg a.b.c 22 _INBOX.x.y 7\r\nab\r\ncd\n\r\n',
  `HMSG kv.k 3 $JS.ACK.S.C.1.2.3.1733388888888888888.0 ${headers.length} ${headers.length + 2}\r\n${headers}hi\r\n`,
  "-ERR 'Authorization Violation'\r\n",
].join('');

describe("nats.js's protocol parser with its tables written in as numbers", () => {
  let original: ParserModule;
  let rewritten: ParserModule;
  let text: string;

  beforeAll(async () => {
    original = require(PARSER) as ParserModule; // eslint-disable-line @typescript-eslint/no-require-imports
    text = await bundled(`module.exports = require(${JSON.stringify(PARSER)});`, true);
    const module = { exports: {} as ParserModule };
    new Function('module', 'exports', 'require', text)(module, module.exports, require);
    rewritten = module.exports;
  });

  it('looks nothing up in them', () => {
    expect(text).not.toMatch(/\bexports\d*\.(State|cc)\.\w+/);
    expect(text).toMatch(/case 0:/);
  });

  it('makes of every message what the original does, however the bytes arrive', () => {
    const wire = Buffer.from(WIRE, 'latin1');
    const whole = parsed(rewritten, [wire]);
    expect(whole).toEqual(parsed(original, [wire]));
    expect(whole).toHaveLength(8);
    for (let at = 1; at < wire.length; at++) {
      const halves = [wire.subarray(0, at), wire.subarray(at)];
      expect(parsed(rewritten, halves)).toEqual(parsed(original, halves));
    }
  });

  it('refuses what the original refuses, with the same error', () => {
    const junk = [Buffer.from('PING\r\nXYZ\r\n', 'latin1')];
    expect(parsed(rewritten, junk)).toEqual(parsed(original, junk));
    expect(parsed(rewritten, junk).at(-1)).toMatch(/^threw /);
  });
});

describe("nats.js's close trace", () => {
  let server: NatsServerProcess;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(() => server.stop());

  // A client bundled from this, which counts the stack traces formatted while it closes and after.
  const client = `const { connect } = require('@nats-io/transport-node');
(async () => {
  const nc = await connect({ servers: process.env.NATS_URL });
  let formatted = 0;
  Error.prepareStackTrace = (error, frames) => { formatted++; return [String(error), ...frames.map((f) => '    at ' + f)].join('\\n'); };
  await nc.close();
  const atClose = formatted;
  const why = nc.protocol.whyClosed;
  console.log(JSON.stringify({ atClose, why, after: formatted }));
})();`;

  async function closing(rewrites: boolean): Promise<{ atClose: number; why: string; after: number }> {
    const file = join(scratch, `client-${rewrites ? 'rewritten' : 'original'}.cjs`);
    writeFileSync(file, await bundled(client, rewrites));
    const { stdout } = await execFileAsync(process.execPath, [file], { env: { ...process.env, NATS_URL: server.url } });
    return JSON.parse(stdout) as { atClose: number; why: string; after: number };
  }

  it('is formatted only when read, from where the connection was closed', async () => {
    const rewritten = await closing(true);
    expect(rewritten.atClose).toBe(0);
    expect(rewritten.why).toMatch(/^Error: close trace\n {4}at .*close/);
    expect(rewritten.after).toBe(1);
    // The original formats it at every close, which is what the rewrite saves.
    const original = await closing(false);
    expect(original.atClose).toBe(1);
    expect(original.why).toMatch(/^Error: close trace\n/);
  });
});

describe('a dependency whose text the rewrites no longer find', () => {
  it('fails the build, naming the file to update', async () => {
    const lib = join(scratch, 'outdated/node_modules/@nats-io/nats-core/lib');
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(lib, 'protocol.js'), 'exports.close = function () { this.whyClosed = new Error("why").stack; };\n');
    await expect(bundled(`require(${JSON.stringify(join(lib, 'protocol.js'))});`, true, join(scratch, 'outdated'))).rejects.toThrow(
      /protocol\.js no longer has "this\.whyClosed = new Error\("close trace"\)\.stack \|\| "";": update scripts\/package\/dependencyRewrites\.ts/,
    );
  });
});
