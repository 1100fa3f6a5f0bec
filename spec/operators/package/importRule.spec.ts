import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const root = join(__dirname, '..', '..', '..');

// ESLint runs in a child process: its flat config is an ES module, which jest's module system
// would have to load with experimental flags. One process lints every sample and the kit itself.
const script = `
const { ESLint } = require('eslint');
(async () => {
  const eslint = new ESLint({ cwd: process.cwd() });
  const samples = JSON.parse(process.argv[1]);
  const fired = [];
  for (const [filePath, code] of samples) {
    const [result] = await eslint.lintText(code, { filePath });
    fired.push(result.messages.filter((m) => m.ruleId.startsWith('no-restricted-')).length);
  }
  const kit = await eslint.lintFiles(['operators']);
  const kitErrors = kit.flatMap((r) => r.messages.map((m) => r.filePath + ': ' + m.message));
  console.log(JSON.stringify({ fired, kitFiles: kit.length, kitErrors }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

interface Verdict {
  fired: number[];
  kitFiles: number;
  kitErrors: string[];
}

async function lint(samples: Array<[string, string]>): Promise<Verdict> {
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, JSON.stringify(samples)], { cwd: root });
  return JSON.parse(stdout) as Verdict;
}

describe('the lint rules that keep operators/ to rxjs', () => {
  const banned: Array<[string, string]> = [
    ['node: built-in', "import { readFile } from 'node:fs';\nexport const f = readFile;\n"],
    ['node:events (what PauseGate once imported)', "import { setMaxListeners } from 'node:events';\nexport const f = setMaxListeners;\n"],
    ['bare built-in', "import * as net from 'net';\nexport const f = net;\n"],
    ['type-only built-in', "import type { ChildProcess } from 'node:child_process';\nexport type F = ChildProcess;\n"],
    ['re-export of a built-in', "export { request } from 'node:http';\n"],
    ['another package', "import pino from 'pino';\nexport const f = pino;\n"],
    ['the domain', "import { x } from '../lib/x';\nexport const f = x;\n"],
    ['rxjs internals', "import { x } from 'rxjs/internal/x';\nexport const f = x;\n"],
    ['a dynamic import', "export const f = () => import('node:fs');\n"],
    ['a timer of its own', 'export const f = () => setTimeout(() => undefined, 1);\n'],
    ['the wall clock', 'export const f = () => Date.now();\n'],
    ['a request', "export const f = () => fetch('http://x');\n"],
  ];
  const allowed: Array<[string, string]> = [
    ['rxjs', "import { map } from 'rxjs';\nexport const f = map;\n"],
    ['rxjs/testing', "import { TestScheduler } from 'rxjs/testing';\nexport const f = TestScheduler;\n"],
    ['a file of the kit', "import { RingQueue } from './RingQueue';\nexport const f = RingQueue;\n"],
    ['a file of the kit, from a subfolder', "import { RingQueue } from '../RingQueue';\nexport const f = RingQueue;\n"],
  ];

  it('fire on every import that is not rxjs or the kit (node:-prefixed or not), on timers, clocks and requests, and pass the kit as it is', async () => {
    const samples: Array<[string, string]> = [
      ...banned.map(([, code]): [string, string] => ['operators/probe.ts', code]),
      ...allowed.slice(0, 3).map(([, code]): [string, string] => ['operators/probe.ts', code]),
      ['operators/internal/probe.ts', allowed[3][1]],
      // Outside the kit the same import is none of this rule's business.
      ['streams/probe.ts', banned[0][1]],
    ];
    const verdict = await lint(samples);
    const named = (i: number): [string, number] => [samples[i][1].split('\n')[0], verdict.fired[i]];
    expect(banned.map((_, i) => named(i)).filter(([, n]) => n === 0)).toEqual([]);
    expect(allowed.map((_, i) => named(banned.length + i)).filter(([, n]) => n > 0)).toEqual([]);
    expect(verdict.fired.at(-1)).toBe(0);
    expect(verdict.kitFiles).toBeGreaterThan(15);
    expect(verdict.kitErrors).toEqual([]);
  }, 60_000);
});
