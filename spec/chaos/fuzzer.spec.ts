import { fuzz } from '../../bench/chaos/fuzz/fuzzer';
import { fuzzTargets } from '../../bench/chaos/fuzz/targets';
import { Rng, inputSeed } from '../../bench/chaos/fuzz/random';

// The chaos suite feeds 100,000 inputs (`npm run chaos -- fuzz`); this is its seeded sample in
// `npm test`: every decoder and configuration reader, 150 inputs each.
describe('the fuzzer over every decoder and configuration reader', () => {
  it('finds no untyped error and no secret in a problem line (seed 14, 150 inputs per target)', async () => {
    const targets = await fuzzTargets();
    const report = await fuzz({ seed: 14, inputs: 150 * targets.length });
    expect(report.failures).toEqual([]);
    expect(report.targets.map((t) => t.name)).toEqual(targets.map((t) => t.name));
    expect(report.targets.every((t) => t.inputs === 150)).toBe(true);
  }, 120_000);

  it('is replayable: input i of a seed is the same whenever it is made, alone or in a run', async () => {
    const targets = await fuzzTargets();
    const made = (seed: number, index: number): string => targets[index % targets.length].input(new Rng(inputSeed(seed, index)));
    expect([made(14, 1234), made(14, 1234)]).toEqual([made(14, 1234), made(14, 1234)]);
    expect(made(14, 1234)).not.toBe(made(15, 1234));
    const alone = await fuzz({ seed: 14, inputs: 0, index: 1234 });
    expect(alone.inputs).toBe(1);
    expect(alone.targets.reduce((n, t) => n + t.inputs, 0)).toBe(1);
  });

  it('catches what it is there to catch: an untyped error, and a secret in a problem line', async () => {
    // The provisioner's YAML before issue 14 item 3 threw past its error handling, echoing the
    // token; the fuzzer must see both kinds of failure when a target behaves so.
    const throwing = {
      name: 'x',
      input: () => 'token: *Zq9SecretMarker',
      run: () => {
        throw new ReferenceError('Unresolved alias: Zq9SecretMarker');
      },
      typed: () => false,
    };
    const leaking = {
      name: 'y',
      input: () => 'token: Zq9SecretMarker',
      run: () => ['token: Zq9SecretMarker'],
      typed: () => false,
      check: (r: unknown) => (JSON.stringify(r).includes('Zq9SecretMarker') ? 'leak' : undefined),
    };
    const report = await fuzz({ seed: 1, inputs: 2, targets: [throwing, leaking] });
    expect(report.failures.map((f) => [f.target, f.kind])).toEqual([
      ['x', 'untyped error'],
      ['y', 'defect'],
    ]);
  });
});
