import { benchOutput, machineLoad } from '../../bench/machineLoad';

jest.mock('node:os', () => {
  const actual = jest.requireActual<typeof import('node:os')>('node:os');
  return { ...actual, loadavg: jest.fn(() => [0.4, 0.3, 0.2]), availableParallelism: jest.fn(() => 2) };
});

const os = jest.requireMock<{ loadavg: jest.Mock }>('node:os');

describe('bench/machineLoad', () => {
  it('reads the load per core', () => {
    os.loadavg.mockReturnValue([1.5, 1, 0.5]);
    expect(machineLoad()).toEqual({ load1: 1.5, load5: 1, load15: 0.5, cores: 2, perCore: 0.75 });
  });

  it('on an idle machine: prints the load at start and end, and figures as they are', () => {
    os.loadavg.mockReturnValue([0.4, 0.3, 0.2]);
    const lines: Record<string, unknown>[] = [];
    const out = benchOutput('spec', (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    out.print({ figure: 'rate', value: 300 });
    out.end();
    out.end();
    expect(out.busy).toBe(false);
    expect(lines).toEqual([
      expect.objectContaining({ figure: 'load average', at: 'start', load1: 0.4, perCore: 0.2, busy: false }),
      { figure: 'rate', value: 300 },
      expect.objectContaining({ figure: 'load average', at: 'end', busy_at_start: false }),
    ]);
  });

  it('on a busy machine (over 0.5 per core at the start): marks every figure not to be published', () => {
    os.loadavg.mockReturnValue([1.3, 1, 1]);
    const lines: Record<string, unknown>[] = [];
    const out = benchOutput('spec', (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    out.print({ figure: 'rate', value: 60 });
    out.print({ node: 'v20' });
    expect(out.busy).toBe(true);
    expect(lines[1]).toMatchObject({ figure: 'rate', value: 60, machine_busy: true });
    expect(String(lines[1].note)).toMatch(/^measured on a busy machine \(1-minute load 1\.3 on 2 cores at the start\)/);
    // Lines that are not figures are left alone.
    expect(lines[2]).toEqual({ node: 'v20' });
    out.end();
  });
});
