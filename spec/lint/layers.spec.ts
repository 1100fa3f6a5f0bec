import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

/** A file's text, linted with the project's own configuration as if it stood at `path`. */
interface Probe {
  path: string;
  text: string;
}

/**
 * Lints every probe with ESLint's API in one child process (the flat config is an ES module, which
 * jest's CommonJS runtime cannot load) and returns, per probe, the rule ids it broke.
 */
function lint(probes: Probe[]): string[][] {
  const script = `
    const { ESLint } = require('eslint');
    const probes = JSON.parse(process.argv[1]);
    (async () => {
      const eslint = new ESLint({ cwd: ${JSON.stringify(ROOT)} });
      const out = [];
      for (const p of probes) {
        const [result] = await eslint.lintText(p.text, { filePath: require('path').join(${JSON.stringify(ROOT)}, p.path) });
        out.push(result.messages.map((m) => m.ruleId ?? m.message));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });
  `;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, JSON.stringify(probes)], { cwd: ROOT, encoding: 'utf8' })) as string[][];
}

/** 301 lines of code, one over the house size. */
const LONG_FILE = Array.from({ length: 301 }, (_, i) => `export const x${i} = ${i};`).join('\n') + '\n';

describe('the layers are enforced by lint', () => {
  it('refuses I/O and upper layers in lib/, bin/ in streams/, and lets each layer use what is below it', () => {
    const cases: Array<Probe & { refused: boolean; rule?: string }> = [
      { path: 'lib/provision/probe.ts', text: "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n", refused: true },
      { path: 'lib/provision/probe.ts', text: "import { readFileSync } from 'fs';\nexport const x = readFileSync;\n", refused: true },
      { path: 'lib/provision/probe.ts', text: "import { spawn } from 'node:child_process';\nexport const x = spawn;\n", refused: true },
      {
        path: 'lib/provision/probe.ts',
        text: "import { writeFile } from 'node:fs/promises';\nexport const x = writeFile;\n",
        refused: true,
      },
      {
        path: 'lib/provision/probe.ts',
        text: "import { connect } from '@nats-io/transport-node';\nexport const x = connect;\n",
        refused: true,
      },
      {
        path: 'lib/provision/probe.ts',
        text: "import { nodeSiteFiles } from '../../streams/siteFiles';\nexport const x = nodeSiteFiles;\n",
        refused: true,
      },
      {
        path: 'lib/provision/probe.ts',
        text: "import { registerDemo } from '../../bin/commands/demo';\nexport const x = registerDemo;\n",
        refused: true,
      },
      {
        path: 'streams/probe.ts',
        text: "import { registerDemo } from '../bin/commands/demo';\nexport const x = registerDemo;\n",
        refused: true,
      },
      // What each layer may use: the domain below it, and Node's pure modules in lib/.
      {
        path: 'lib/provision/probe.ts',
        text: "import { createHash } from 'node:crypto';\nimport { admit } from '@rxfleet/operators';\nexport const x = [createHash, admit];\n",
        refused: false,
      },
      {
        path: 'streams/probe.ts',
        text: "import { readFileSync } from 'node:fs';\nimport { SiteFiles } from '../lib/siteFiles';\nexport const x: [typeof readFileSync, SiteFiles | undefined] = [readFileSync, undefined];\n",
        refused: false,
      },
      {
        path: 'bin/probe.ts',
        text: "import { nodeSiteFiles } from '../streams/siteFiles';\nimport { readFileSync } from 'node:fs';\nexport const x = [nodeSiteFiles, readFileSync];\n",
        refused: false,
      },
      // pino in lib/: the Logger type and a logger on a sink it is handed, never a destination.
      { path: 'lib/probe.ts', text: "import pretty from 'pino-pretty';\nexport const x = pretty;\n", refused: true },
      {
        path: 'lib/probe.ts',
        text: "import pino from 'pino';\nexport const x = pino.destination(1);\n",
        refused: true,
        rule: 'no-restricted-properties',
      },
      {
        path: 'lib/probe.ts',
        text: "import pino from 'pino';\nexport const x = pino({ level: 'info' });\n",
        refused: true,
        rule: 'no-restricted-syntax',
      },
      {
        path: 'lib/probe.ts',
        text: "import pino from 'pino';\nexport const x = pino({ level: 'silent' }, { write: () => undefined });\n",
        refused: false,
      },
      { path: 'streams/probe.ts', text: "import pino from 'pino';\nexport const x = pino(pino.destination(1));\n", refused: false },
      // The house size: shipped source only.
      { path: 'lib/probe.ts', text: LONG_FILE, refused: true, rule: 'max-lines' },
      { path: 'spec/probe.spec.ts', text: LONG_FILE, refused: false },
    ];
    const results = lint(cases);
    cases.forEach((c, i) => {
      const rules = results[i];
      if (c.refused)
        expect({ path: c.path, text: c.text, rules }).toEqual({
          path: c.path,
          text: c.text,
          rules: expect.arrayContaining([c.rule ?? 'no-restricted-imports']),
        });
      else expect({ path: c.path, text: c.text, rules }).toEqual({ path: c.path, text: c.text, rules: [] });
    });
  });
});
