import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import jest from 'eslint-plugin-jest';
import prettier from 'eslint-config-prettier/flat';

/** Node's modules that reach outside the process: files, sockets, processes, name lookups. */
const IO_MODULES = [
  'fs',
  'fs/promises',
  'child_process',
  'net',
  'http',
  'https',
  'http2',
  'dgram',
  'dns',
  'dns/promises',
  'tls',
  'worker_threads',
  'cluster',
].flatMap((name) => [name, `node:${name}`]);

export default tseslint.config(
  { ignores: ['**/*.generated.ts', 'dist/**', '*/dist/**', 'build/**', 'node_modules/**', 'coverage/**', 'jest.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'off',
    },
  },
  // The house size for shipped source: a file over 300 lines of code (blank lines and comments not
  // counted, since every export carries a doc comment) does more than one job; split it by job.
  // Exempt: spec/ and bench/ (a spec is one subject's cases and a bench one run's figures, and
  // splitting either scatters what is read together), and the built and installed trees (ignored
  // above).
  {
    files: ['index.ts', 'lib/**/*.ts', 'streams/**/*.ts', 'bin/**/*.ts', 'operators/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 300, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['spec/**/*.ts'],
    ...jest.configs['flat/recommended'],
    rules: {
      ...jest.configs['flat/recommended'].rules,
      'jest/no-focused-tests': 'error',
      'jest/no-disabled-tests': 'error',
      // Property tests and table-driven specs assert inside loops and branches on purpose.
      'jest/no-conditional-expect': 'off',
      'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*', '*.expect*', 'assert*'] }],
    },
  },
  // The layers (README, "Layers"): lib/ is the domain and does no I/O of its own; streams/ owns every
  // socket, file and process; bin/ wires them. A ban must name what the code really writes, so both
  // the `node:` and the bare names are listed.
  {
    files: ['lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/streams/**', '**/streams', '**/bin/**', '**/bin'],
              message: 'lib/ is the domain: I/O and wiring live in streams/ and bin/',
            },
            { group: ['rxjs/internal/*'], message: 'not public API in RxJS 7' },
          ],
          paths: [...IO_MODULES, '@nats-io/transport-node', '@nats-io/jetstream', '@nats-io/kv', 'ws', 'pino-pretty'].map((name) => ({
            name,
            message: 'lib/ does no I/O: this belongs in streams/',
          })),
        },
      ],
      // pino is both the Logger type the domain takes and a writer of files and streams: lib/ may
      // build a logger only on a sink it is handed (silentLogger's, which drops every line), never
      // open one. Where log lines really go is streams/logOutput.ts.
      'no-restricted-properties': [
        'error',
        ...['destination', 'transport', 'multistream'].map((property) => ({
          object: 'pino',
          property,
          message: "lib/ does no I/O: log destinations are streams/logOutput.ts's",
        })),
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.name='pino'][arguments.length<2]",
          message: "lib/ does no I/O: pino without a sink opens stdout; log destinations are streams/logOutput.ts's",
        },
      ],
    },
  },
  {
    files: ['streams/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/bin/**', '**/bin'], message: 'streams/ is below bin/: bin wires streams, not the other way' },
            { group: ['rxjs/internal/*'], message: 'not public API in RxJS 7' },
          ],
        },
      ],
    },
  },
  {
    // The packed-tarball spec's consumers and bundled applications: plain Node scripts, as a user of
    // the kit writes them.
    files: ['spec/operators/package/**/*.cjs', 'spec/operators/package/**/*.mjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The kit's build script runs in Node.
    files: ['operators/build.mjs'],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    // The kit runs wherever rxjs runs: it imports rxjs and its own files, nothing else. An allow-list,
    // not a list of banned names, so that `node:fs`, `fs`, `node:events` and any package all fail.
    files: ['operators/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!rxjs$|rxjs/testing$|\\.\\.?/)',
              message: 'operators/ imports rxjs only: no node: built-in, no I/O, no other package',
            },
            { group: ['../lib/*', '../streams/*', '../bin/*', '../spec/*', '../../*'], message: 'operators/ knows no domain and no I/O' },
            { group: ['rxjs/internal/*'], message: 'not public API in RxJS 7' },
          ],
        },
      ],
      // Time comes from an injected scheduler (so specs run in virtual time), and the world from
      // the caller: no timers, no clocks, no network, no process of the kit's own.
      'no-restricted-globals': [
        'error',
        ...[
          'setTimeout',
          'setInterval',
          'setImmediate',
          'fetch',
          'XMLHttpRequest',
          'WebSocket',
          'process',
          'Buffer',
          'require',
          'window',
          'document',
        ].map((name) => ({ name, message: 'operators/ does no I/O and takes its timing from a SchedulerLike' })),
      ],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: "use the injected scheduler's now()" }],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ImportExpression',
          message: 'operators/ loads nothing at run time: import rxjs statically',
        },
      ],
    },
  },
  // Formatting is prettier's (`.prettierrc.json`, checked by `npm run lint`): no ESLint rule argues with it.
  prettier,
);
