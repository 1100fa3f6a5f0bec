/** Numbers a scenario reads from the environment (NODES, OUTAGE_MS, ...), with defaults. */
export interface ScenarioEnv {
  number(name: string, fallback: number): number;
}

/** One fault, run on real processes, bounded in time; its figures, with a `goals` object of booleans. */
export interface Scenario {
  name: string;
  description: string;
  run(env: ScenarioEnv): Promise<Record<string, unknown> & { goals?: Record<string, boolean>; skipped?: string }>;
}
