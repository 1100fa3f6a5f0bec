import { fuzz } from '../fuzz/fuzzer';
import { Scenario } from './scenario';

/**
 * FUZZ_INPUTS (default 100,000) seeded inputs (FUZZ_SEED, default 14) across every decoder and
 * configuration reader. Goal: zero untyped errors, zero secrets in problem lines. A failure prints
 * its seed and index: `FUZZ_SEED=s FUZZ_INDEX=i npm run chaos -- fuzz` replays that one input.
 */
export const fuzzInputs: Scenario = {
  name: 'fuzz',
  description: 'seeded, replayable fuzzing of every decoder and configuration reader',
  async run(env) {
    const seed = env.number('FUZZ_SEED', 14);
    const index = env.number('FUZZ_INDEX', -1);
    const report = await fuzz({ seed, inputs: env.number('FUZZ_INPUTS', 100_000), ...(index >= 0 ? { index } : {}) });
    return {
      seed,
      inputs: report.inputs,
      seconds: report.seconds,
      targets: Object.fromEntries(
        report.targets.map((t) => [t.name, { inputs: t.inputs, typed_errors: t.typedErrors, failures: t.failures }]),
      ),
      failures: report.failures.slice(0, 20),
      goals: {
        zero_untyped_errors: report.failures.every((f) => f.kind !== 'untyped error'),
        zero_defects: report.failures.every((f) => f.kind !== 'defect'),
      },
    };
  },
};
