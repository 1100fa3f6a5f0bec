import { FuzzTarget, fuzzTargets } from './targets';
import { Rng, inputSeed } from './random';

/** One input a target failed on: enough to replay it (`seed` and `index`) and to read why. */
export interface FuzzFailure {
  target: string;
  index: number;
  kind: 'untyped error' | 'defect';
  error: string;
  /** The start of the input, escaped. */
  input: string;
}

/** What a fuzzing run found. */
export interface FuzzReport {
  seed: number;
  inputs: number;
  /** Per target: inputs fed, typed errors (documented refusals), and failures. */
  targets: { name: string; inputs: number; typedErrors: number; failures: number }[];
  failures: FuzzFailure[];
  seconds: number;
}

/** Options for {@link fuzz}. */
export interface FuzzOptions {
  seed: number;
  /** Inputs in all, shared round-robin by the targets. */
  inputs: number;
  /** Only targets whose name contains this. */
  only?: string;
  /** Other targets than the project's (the fuzzer's own spec). */
  targets?: FuzzTarget[];
  /** Replay just this input index (with the same seed, targets and `only`). */
  index?: number;
  /** Called every this many inputs with how far it got. */
  onProgress?: (done: number) => void;
}

/**
 * Feeds every decoder and configuration reader seeded, replayable inputs (input `i` of seed `s` is
 * the same on every run, whatever else runs) and records each input a target fails on: an error it
 * does not document (its contract says it returns a refusal, or throws one typed error), or a
 * result that breaks a rule (a secret in a problem line).
 */
export async function fuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const all = options.targets ?? (await fuzzTargets());
  const targets = options.only === undefined ? all : all.filter((t) => t.name.includes(options.only as string));
  if (targets.length === 0) throw new Error(`no fuzz target matches ${JSON.stringify(options.only)}`);
  const stats = targets.map((t) => ({ name: t.name, inputs: 0, typedErrors: 0, failures: 0 }));
  const failures: FuzzFailure[] = [];
  // A library's process warning (yaml's go to stderr and quote the text) is a defect too; it comes
  // a tick after the input that caused it.
  let current = { target: '', index: -1 };
  const onWarning = (warning: Error): void =>
    void failures.push({ ...current, kind: 'defect', error: `a process warning: ${warning.name}`, input: '' });
  process.on('warning', onWarning);
  const indices = options.index === undefined ? range(options.inputs) : [options.index];
  for (const index of indices) {
    const which = index % targets.length;
    const target = targets[which];
    current = { target: target.name, index };
    const outcome = await feed(target, new Rng(inputSeed(options.seed, index)));
    stats[which].inputs++;
    if (outcome.typed) stats[which].typedErrors++;
    if (outcome.failure !== undefined) {
      stats[which].failures++;
      failures.push({ target: target.name, index, ...outcome.failure });
    }
    if (options.onProgress !== undefined && (index + 1) % 10_000 === 0) options.onProgress(index + 1);
  }
  await new Promise((resolve) => setImmediate(resolve));
  process.off('warning', onWarning);
  return {
    seed: options.seed,
    inputs: options.index === undefined ? options.inputs : 1,
    targets: stats,
    failures,
    seconds: (Date.now() - started) / 1000,
  };
}

async function feed(
  target: FuzzTarget,
  rng: Rng,
): Promise<{ typed: boolean; failure?: { kind: FuzzFailure['kind']; error: string; input: string } }> {
  const input = target.input(rng);
  const shown = JSON.stringify(input.slice(0, 300));
  try {
    const result = await target.run(input);
    const defect = target.check?.(result);
    return defect === undefined ? { typed: false } : { typed: false, failure: { kind: 'defect', error: defect, input: shown } };
  } catch (error) {
    if (target.typed(error)) return { typed: true };
    const described = error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : String(error);
    return { typed: false, failure: { kind: 'untyped error', error: described, input: shown } };
  }
}

function* range(n: number): Generator<number> {
  for (let i = 0; i < n; i++) yield i;
}
