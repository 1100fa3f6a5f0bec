import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../lib/logger';

describe('createLogger', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-log-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const linesOf = async (logger: ReturnType<typeof createLogger>, file: string): Promise<Record<string, unknown>[]> => {
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    return readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  };

  it('appends JSON lines to a file at level info by default, without debug', async () => {
    const file = join(dir, 'a.log');
    const logger = createLogger({ file, name: 'spec' });
    logger.debug('hidden');
    logger.info({ identity: 'n1' }, 'shown');
    const lines = await linesOf(logger, file);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, name: 'spec', identity: 'n1', msg: 'shown' });
  });

  it('never writes a secret, at any depth a caller might put one', async () => {
    const file = join(dir, 'b.log');
    const logger = createLogger({ file });
    logger.info({ token: 'toomanysecrets', config: { password: 'hunter2', nested: { key: 'PRIVATE' } }, broker_provisioning_password: 'pw' }, 'configured');
    const text = JSON.stringify(await linesOf(logger, file));
    for (const secret of ['toomanysecrets', 'hunter2', 'PRIVATE', '"pw"']) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
  });
});
