import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { fileColdStore } from '../../streams/coldStoreFile';
import { ColdStoreDocument, coldStoreProblem, modelFromSnapshot, snapshotModel } from '../../lib/enricher/coldStore/coldStoreDocument';
import { FleetModel } from '../../lib/enricher/model/FleetModel';

function capture(): { logger: pino.Logger; lines: () => Array<{ msg: string }> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return {
    logger: pino({ level: 'debug' }, stream),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string }),
  };
}

function model(): FleetModel {
  const m = new FleetModel();
  const br0 = { name: 'br0', project: 'default', managed: true, type: 'bridge', ipv4: '10.0.0.1/24', ipv6: '' };
  m.setProjectConfig('default', {});
  m.setProjectConfig('p2', { 'user.team': 'blue' });
  m.setNetwork(br0);
  m.setInstance('p2', 'w1', {
    type: 'container',
    status: 'Running',
    running: true,
    location: 'none',
    profiles: ['default'],
    config: { 'user.role': 'web' },
    interfaces: [{ name: 'eth0', device: 'eth0', project: 'default', network: 'br0', managed: true, ipv4: ['10.0.0.5'], ipv6: [] }],
    networks: { 'default/br0': br0 },
  });
  m.setInstance('default', 'off', {
    type: 'container',
    status: 'Stopped',
    running: false,
    location: '',
    profiles: [],
    config: {},
    interfaces: [],
    networks: {},
  });
  return m;
}

describe('the cold store document', () => {
  it('round-trips the model: every project, network and instance, "never read" apart from "sets nothing"', () => {
    const original = model();
    const unread = new FleetModel();
    unread.setNetwork({ name: 'x', project: 'p9', managed: false, type: '', ipv4: '', ipv6: '' });
    const document = snapshotModel(original);
    expect(coldStoreProblem(document)).toBeUndefined();
    const back = modelFromSnapshot(JSON.parse(JSON.stringify(document)) as ColdStoreDocument);
    expect(snapshotModel(back)).toEqual(document);
    expect(back.dirty).toBe(false);
    expect(back.instance('p2', 'w1')).toEqual(original.instance('p2', 'w1'));
    expect(snapshotModel(unread).projects.p9.config).toBeNull();
    // Empty lists and maps are left out of the file.
    expect(document.projects.default.instances?.off).toEqual({ type: 'container', status: 'Stopped', running: false, config: {} });
  });

  it('names the first problem of a document that does not match', () => {
    expect(coldStoreProblem({ version: 2, projects: {} })).toMatch(/version/);
    expect(coldStoreProblem({ version: 1, projects: { p: { instances: {} } } })).toMatch(/config/);
  });
});

describe('the cold store file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-store-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is written atomically with mode 0600, even over a leftover temporary file, and read back', async () => {
    const path = join(dir, 'store.json');
    writeFileSync(`${path}.tmp`, 'half a file');
    chmodSync(`${path}.tmp`, 0o644);
    const writes: boolean[] = [];
    const store = fileColdStore(path, { onWrite: (ok) => writes.push(ok) });
    const document = snapshotModel(model());
    await store.save(document);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.tmp`)).toBe(false);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(document);
    expect(store.load()).toEqual(document);
    expect(writes).toEqual([true]);
  });

  it('never overlaps writes and writes only the newest of those offered meanwhile', async () => {
    const path = join(dir, 'store.json');
    const writes: boolean[] = [];
    const store = fileColdStore(path, { onWrite: (ok) => writes.push(ok) });
    const doc = (n: string): ColdStoreDocument => ({ version: 1, projects: { [n]: { config: {} } } });
    const done = [store.save(doc('a')), store.save(doc('b')), store.save(doc('c'))];
    await Promise.all(done);
    expect(writes).toEqual([true, true]);
    expect(Object.keys(store.load()?.projects ?? {})).toEqual(['c']);
  });

  it('starts cold, with one warning, from a file that is missing, not JSON, or not a store; a failed write is reported with its error, not logged', async () => {
    const path = join(dir, 'store.json');
    const { logger, lines } = capture();
    const writes: boolean[] = [];
    const store = fileColdStore(path, { logger, onWrite: (ok) => writes.push(ok) });
    expect(store.load()).toBeUndefined();
    writeFileSync(path, '{"version":');
    expect(store.load()).toBeUndefined();
    writeFileSync(path, JSON.stringify({ version: 1, projects: { p: { config: 7 } } }));
    expect(store.load()).toBeUndefined();
    expect(lines().map((l) => l.msg)).toEqual([
      'the cold store is not JSON: starting cold',
      'the cold store does not match its schema: starting cold',
    ]);
    const errors: unknown[] = [];
    const nowhere = fileColdStore(join(dir, 'missing-dir', 'store.json'), {
      logger,
      onWrite: (ok, error) => {
        writes.push(ok);
        errors.push(error);
      },
    });
    await nowhere.save({ version: 1, projects: {} });
    expect(writes).toEqual([false]);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe('ENOENT');
    // The enricher logs it (once, backing off its retries): the store adds no line of its own.
    expect(lines()).toHaveLength(2);
  });
});
