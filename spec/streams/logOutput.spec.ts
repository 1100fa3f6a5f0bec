import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../streams/logOutput';

describe('createLogger', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-log-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const linesOf = async (logger: ReturnType<typeof createLogger>, file: string): Promise<Record<string, unknown>[]> => {
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    return readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
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
    logger.info(
      { token: 'toomanysecrets', config: { password: 'hunter2', nested: { key: 'PRIVATE' } }, broker_provisioning_password: 'pw' },
      'configured',
    );
    const text = JSON.stringify(await linesOf(logger, file));
    for (const secret of ['toomanysecrets', 'hunter2', 'PRIVATE', '"pw"']) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
  });

  it('removes URL credentials from every line, whatever field or message carries them', async () => {
    const file = join(dir, 'c.log');
    const logger = createLogger({ destination: { file } });
    logger.warn(
      { servers: ['nats://admin:PASS@broker:4222'], err: new Error('cannot reach nats://admin:PASS@broker:4222') },
      'connecting to nats://admin:PASS@broker:4222',
    );
    const text = JSON.stringify(await linesOf(logger, file));
    expect(text).not.toContain('PASS');
    expect(text).toContain('nats://[redacted]@broker:4222');
  });

  it("writes logrus's text form with format logfmt", async () => {
    const file = join(dir, 'd.log');
    const logger = createLogger({ destination: { file }, format: 'logfmt', name: 'rxfleet-provision' });
    logger.warn({ identity: 'n1.example.net', token: 's3cret' }, 'Could not provision n1.example.net');
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    const line = readFileSync(file, 'utf8').trim();
    expect(line).toMatch(
      /^time="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)" level=warning msg="Could not provision n1.example.net" identity=n1.example.net name=rxfleet-provision token="\[redacted\]"$/,
    );
  });

  it('writes nothing to the discard destination', () => {
    expect(createLogger({ destination: 'discard' }).isLevelEnabled('fatal')).toBe(false);
  });
});
