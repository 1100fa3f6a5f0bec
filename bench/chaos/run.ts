/**
 * `npm run chaos [-- scenario ...]`: the faults an operator meets, each a scenario on real
 * processes (nats-server, the daemons as commands, helpers, a private LXD daemon), bounded in time,
 * each printing its figures as one JSON line with the goals it met. Without a name, every scenario
 * runs, one after the other. Sizes come from the environment (NODES, OUTAGE_MS, LIFECYCLE_JUNK,
 * FUZZ_INPUTS, FUZZ_SEED, ...; each scenario's doc comment names its own). The load average is
 * printed at the start and the end: figures from a busy machine are not figures.
 *
 * Exit status 1 when a scenario failed to run or missed a goal.
 */
import { cleanUpAll } from './parts/processes';
import { benchOutput } from '../machineLoad';
import { brokerRestart } from './scenarios/brokerRestart';
import { clusterPartition, clusterServerKill } from './scenarios/clusterFaults';
import { dataDirFaults } from './scenarios/dataDir';
import { enrichJunk } from './scenarios/enrichJunk';
import {
  enrichClusterServerKill,
  enrichConsumerDown,
  enrichKill,
  enrichLxdRestart,
  enrichNatsKill,
  enrichStandbyKill,
} from './scenarios/durableFaults';
import { fuzzInputs } from './scenarios/fuzzInputs';
import { helperFailures } from './scenarios/helperFailures';
import { junkInput } from './scenarios/junk';
import { lxdRestart } from './scenarios/lxdRestart';
import { natsOutage } from './scenarios/natsOutage';
import { provisionerRestart } from './scenarios/provisionerRestart';
import { Scenario, ScenarioEnv } from './scenarios/scenario';

const SCENARIOS: Scenario[] = [
  brokerRestart,
  provisionerRestart,
  junkInput,
  enrichJunk,
  helperFailures,
  lxdRestart,
  natsOutage,
  dataDirFaults,
  fuzzInputs,
  clusterServerKill,
  clusterPartition,
  enrichKill,
  enrichNatsKill,
  enrichConsumerDown,
  enrichLxdRestart,
  enrichStandbyKill,
  enrichClusterServerKill,
];

const output = benchOutput('chaos');
const print = (line: Record<string, unknown>): void => output.print(line);
const env: ScenarioEnv = {
  number: (name, fallback) => {
    const value = process.env[name];
    return value === undefined || value === '' ? fallback : Number(value);
  },
};

async function main(): Promise<number> {
  const asked = process.argv.slice(2);
  if (asked.includes('--list') || asked.includes('--help')) {
    for (const s of SCENARIOS) console.log(`${s.name.padEnd(22)}${s.description}`);
    return 0;
  }
  const unknown = asked.filter((name) => !SCENARIOS.some((s) => s.name === name));
  if (unknown.length > 0) {
    console.error(`unknown scenario ${unknown.join(', ')}; one of: ${SCENARIOS.map((s) => s.name).join(', ')}`);
    return 2;
  }
  const chosen = asked.length === 0 ? SCENARIOS : SCENARIOS.filter((s) => asked.includes(s.name));
  print({ figure: 'chaos run', node: process.version, scenarios: chosen.map((s) => s.name) });
  let failed = false;
  for (const scenario of chosen) {
    const started = Date.now();
    try {
      const figures = await scenario.run(env);
      const goals = figures.goals ?? {};
      const met = Object.values(goals).every(Boolean);
      failed ||= !met && figures.skipped === undefined;
      print({
        figure: 'scenario',
        scenario: scenario.name,
        ...figures,
        goals_met: figures.skipped === undefined ? met : null,
        wall_seconds: Math.round((Date.now() - started) / 100) / 10,
      });
    } catch (error) {
      failed = true;
      print({
        figure: 'scenario',
        scenario: scenario.name,
        error: error instanceof Error ? error.message : String(error),
        wall_seconds: Math.round((Date.now() - started) / 100) / 10,
      });
    } finally {
      await cleanUpAll();
    }
  }
  output.end();
  return failed ? 1 : 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanUpAll().finally(() => process.exit(130)));
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    void cleanUpAll().finally(() => process.exit(1));
  },
);
