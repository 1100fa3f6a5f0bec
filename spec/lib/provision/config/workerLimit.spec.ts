import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workerLimitProblems } from '../../../../lib/provision/config/workerLimit';
import { machineLimits } from '../../../../streams/machineLimits';
import { loadProvisionerConfig } from '../../../../streams/provisionerConfigFile';

// Issue 14 item 7: `workers: 100000` was accepted silently (1,721 helpers at once).
describe('workers past what the machine can run', () => {
  it('is fine within the limits, and a warning naming each limit it passes', () => {
    expect(workerLimitProblems(16, { cpus: 2, openFiles: 20_000, processes: 96_000 })).toEqual([]);
    expect(workerLimitProblems(256, { cpus: 2, openFiles: 20_000 })).toEqual([]);
    const problems = workerLimitProblems(100_000, { cpus: 2, openFiles: 20_000, processes: 96_364 });
    expect(problems.map((p) => [p.path, p.severity])).toEqual([
      ['workers', 'warning'],
      ['workers', 'warning'],
      ['workers', 'warning'],
    ]);
    expect(problems.map((p) => p.message)).toEqual([
      '100000 helper processes may run at once, each holding 3 open files in the daemon, but this process may open 20000 (ulimit -n): at most 6624 helpers fit; the rest will fail to start',
      '100000 helper processes may run at once, but this user may run 96364 processes (ulimit -u): the rest will fail to start',
      "100000 helper processes may run at once on 2 CPUs: past about 256 they only wait for each other, and nodes time out; upstream's default is one worker per CPU",
    ]);
    expect(workerLimitProblems(300, { cpus: 1, openFiles: 1024 }).map((p) => p.message.split(':')[0])).toEqual([
      '300 helper processes may run at once, each holding 3 open files in the daemon, but this process may open 1024 (ulimit -n)',
      '300 helper processes may run at once on 1 CPU',
    ]);
  });

  it('reads the limits of this process from /proc/self/limits, leaving out what is unlimited', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-limits-'));
    try {
      const file = join(dir, 'limits');
      writeFileSync(
        file,
        'Limit                     Soft Limit           Hard Limit           Units\nMax processes             unlimited            unlimited            processes\nMax open files            1024                 524288               files\n',
      );
      expect(machineLimits(file)).toMatchObject({ openFiles: 1024 });
      expect(machineLimits(file).processes).toBeUndefined();
      expect(machineLimits(join(dir, 'absent')).openFiles).toBeUndefined();
      expect(machineLimits().cpus).toBeGreaterThan(0);
      // Reading the file of the configuration adds the warning, for validate and provision alike.
      const config = join(dir, 'p.yaml');
      writeFileSync(config, 'helper: /bin/true\nworkers: 100000\n');
      const { problems } = loadProvisionerConfig(config, {}, { cpus: 2, openFiles: 20_000 });
      expect(problems.filter((p) => p.path === 'workers').map((p) => p.severity)).toEqual(['warning', 'warning']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
