// What the bundles (scripts/package/bundle.ts) change in a few dependencies' code, each for time an
// operator's command spends on something it does not use. Each change names the text it expects;
// a dependency that no longer has it fails the build, so an update cannot slip past a rewrite.
import type { Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** A dependency's eager `require` of a built-in, made lazy in the bundle. */
interface Deferral {
  /** The module's path under node_modules. */
  file: string;
  /** Each line as the module has it, and what the bundle has instead. */
  lines: Array<[eager: string, deferred: string]>;
  /** The bindings the deferred module is held in (a pattern), and every use of them the replacement provides. */
  binding: string;
  uses: string[];
}

/**
 * Built-in modules that dependencies load when they load, for what only some commands do:
 * milliseconds of every start (`status` reads a stream over plain nats:// and needs neither tls,
 * dns nor crypto). The bundle's copy loads each at its first use. A dependency that uses more of
 * the module than the replacement provides fails the build rather than loading it again or breaking.
 */
const DEFERRALS: Deferral[] = [
  // For executable subcommands, which the CLI has none of.
  {
    file: 'commander/lib/command.js',
    lines: [
      [
        "const childProcess = require('node:child_process');",
        "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };",
      ],
    ],
    binding: 'childProcess',
    uses: ['childProcess.spawn'],
  },
  // tls for a tls:// server only (its TLSSocket check becomes the socket's own `encrypted`), dns
  // for a host name to resolve; tls loads the crypto module too.
  {
    file: '@nats-io/transport-node/lib/node_transport.js',
    lines: [
      ['const node_tls_1 = require("node:tls");', 'const node_tls_1 = { connect: (...args) => require("node:tls").connect(...args) };'],
      ['return this.socket instanceof node_tls_1.TLSSocket;', 'return this.socket?.encrypted === true;'],
      [
        'const node_dns_1 = __importDefault(require("node:dns"));',
        'const node_dns_1 = { default: { lookup: (...args) => require("node:dns").lookup(...args) } };',
      ],
    ],
    binding: 'node_(?:tls|dns)_1',
    uses: ['node_tls_1.connect', 'node_dns_1.default.lookup'],
  },
  // The NATS client's inbox prefix: 12 random bytes at its first inbox, which through
  // `globalThis.crypto` load the whole Web Crypto API (a few ms of every `status`). The kernel's
  // random source gives the same bytes; Web Crypto only where there is no /dev/urandom.
  {
    file: '@nats-io/nuid/lib/nuid.js',
    lines: [
      [
        'function fillRandom(a) {\n',
        'function fillRandom(a) {\n    try { const fs = require("node:fs"); const fd = fs.openSync("/dev/urandom", "r"); try { if (fs.readSync(fd, a, 0, a.length, null) === a.length) return; } finally { fs.closeSync(fd); } } catch { }\n',
      ],
    ],
    binding: 'globalThis',
    uses: ['globalThis.crypto.getRandomValues'],
  },
  // Its random source, which only making a key uses (signing with an nkey does not).
  {
    file: 'tweetnacl/nacl-fast.js',
    lines: [["crypto = require('crypto');", "crypto = { randomBytes: (n) => require('crypto').randomBytes(n) };"]],
    binding: 'crypto',
    uses: ['crypto.randomBytes', 'crypto.getRandomValues'],
  },
];

/** A dependency's tables of numbers, each read as `exports.<table>.<name>`, written in as numbers. */
interface ConstantTables {
  file: string;
  /** The tables it exports (TypeScript enums, objects of character codes) whose every use is a read. */
  tables: string[];
}

/**
 * Tables of numbers that a dependency looks up where it runs hottest, replaced by their values,
 * read from the module itself at build time. Only reads are replaced; a name the table does not
 * have, a value not a number, or a use of a table left after (an assignment) fails the build.
 */
const CONSTANT_TABLES: ConstantTables[] = [
  // The NATS protocol's parser: a switch over its state, then over the byte, for every byte of every
  // message's line (`MSG <subject> <sid> <reply> <size>`), each case a lookup of two properties
  // until one matches. Numbers instead make each switch a jump in V8's interpreter, which is all a
  // command that reads the fleet and exits ever runs it in: about 3 ms of `status` over 200 records.
  { file: '@nats-io/nats-core/lib/parser.js', tables: ['State', 'cc'] },
];

/**
 * A stack trace a dependency formats where it makes it, formatted when read instead: the module's
 * line `this.<property> = new Error("<message>").stack || "";`.
 */
interface DeferredTrace {
  file: string;
  property: string;
  message: string;
}

/**
 * A process's first stack trace to be formatted costs more the larger the script its frames are
 * in (0.7 ms of `status`, in the reads' 0.4 MB bundle), and nats.js formats one at every close,
 * into a field it never reads: a getter formats the same trace, taken where it was, only if it is
 * read.
 */
const DEFERRED_TRACES: DeferredTrace[] = [
  {
    file: '@nats-io/nats-core/lib/protocol.js',
    property: 'whyClosed',
    message: 'close trace',
  },
];

type Rewrite = (source: string, path: string) => string;

function outdated(path: string, what: string): Error {
  return new Error(`${path} ${what}: update scripts/package/dependencyRewrites.ts`);
}

function deferral({ lines, binding, uses }: Deferral): Rewrite {
  return (source, path) => {
    for (const [eager, deferred] of lines) {
      if (!source.includes(eager)) throw outdated(path, `no longer has "${eager}"`);
      source = source.replace(eager, deferred);
    }
    const used = source.match(new RegExp(`\\b(?:${binding})(?:\\.\\w+)+`, 'g')) ?? [];
    const unprovided = used.filter((use) => !uses.includes(use));
    if (unprovided.length > 0) throw outdated(path, `uses ${unprovided.join(', ')}`);
    return source;
  };
}

function constants({ tables }: ConstantTables): Rewrite {
  return (source, path) => {
    const values = createRequire(path)(path) as Record<string, Record<string, unknown>>;
    const read = new RegExp(`\\bexports\\.(${tables.join('|')})\\.(\\w+)\\b(?!\\s*=[^=])`, 'g');
    const inlined = source.replace(read, (use, table: string, name: string) => {
      const value = values[table]?.[name];
      if (typeof value !== 'number') throw outdated(path, `has ${use}, which is not a number`);
      return String(value);
    });
    const left = new RegExp(`\\bexports\\.(?:${tables.join('|')})\\.\\w+`).exec(inlined);
    if (left !== null) throw outdated(path, `still uses ${left[0]}`);
    return inlined;
  };
}

function deferredTrace({ property, message }: DeferredTrace): Rewrite {
  const line = `this.${property} = new Error(${JSON.stringify(message)}).stack || "";`;
  return (source, path) => {
    if (!source.includes(line)) throw outdated(path, `no longer has "${line}"`);
    return source.replace(
      line,
      `{ const trace = new Error(${JSON.stringify(message)}); Object.defineProperty(this, ${JSON.stringify(property)}, { get: () => trace.stack || "", configurable: true, enumerable: true }); }`,
    );
  };
}

/**
 * Every rewrite above as one esbuild plugin: each file's in the order listed, on the file as
 * node_modules has it.
 */
export function dependencyRewrites(): Plugin {
  const byFile = new Map<string, Rewrite[]>();
  const add = (file: string, rewrite: Rewrite): void => void byFile.set(file, [...(byFile.get(file) ?? []), rewrite]);
  for (const entry of DEFERRALS) add(entry.file, deferral(entry));
  for (const entry of CONSTANT_TABLES) add(entry.file, constants(entry));
  for (const entry of DEFERRED_TRACES) add(entry.file, deferredTrace(entry));
  return {
    name: 'rxfleet-dependency-rewrites',
    setup(b) {
      for (const [file, rewrites] of byFile) {
        const filter = new RegExp(`[\\\\/]node_modules[\\\\/]${file.replace(/[.]/g, '\\.').replace(/\//g, '[\\\\/]')}$`);
        b.onLoad({ filter }, (args) => ({
          contents: rewrites.reduce((source, rewrite) => rewrite(source, args.path), readFileSync(args.path, 'utf8')),
          loader: 'js',
        }));
      }
    },
  };
}
