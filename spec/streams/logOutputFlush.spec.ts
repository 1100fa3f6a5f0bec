import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

// A daemon's last lines (its `stopped`) must reach stdout before it exits: the logger is flushed,
// then the process ends at once. Run as a process of its own against the built code, writing faster
// than a pipe takes it, so writes are in flight when the flush is asked for.
const LOG_OUTPUT = resolve(__dirname, '../../dist/streams/logOutput.js');

const script = `
const { createLogger } = require(${JSON.stringify(LOG_OUTPUT)});
const logger = createLogger({ format: 'json', destination: 'stdout' });
const filler = 'x'.repeat(4000);
for (let i = 0; i < 2000; i++) logger.info({ i, filler }, 'line');
logger.info('the last line');
logger.flush(() => process.exit(0));
`;

describe("the daemons' log on stdout", () => {
  it('has written every line, the last included, when flush calls back, even with writes in flight', async () => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    // Read slowly at first, so the pipe fills and the logger's writes wait.
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), 300);
    child.stdout.on('data', (d: string) => (out += d));
    const code = await new Promise<number | null>((done) => child.on('close', done));
    expect(code).toBe(0);
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(2001);
    expect(JSON.parse(lines.at(-1)!).msg).toBe('the last line');
  });
});
