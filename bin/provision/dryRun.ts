import { Registry } from 'prom-client';
import { asyncScheduler, firstValueFrom, from, map, mergeMap, tap, toArray } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { errorMessage } from '../../lib/choria/errors';
import { DryRunCycle } from '../../lib/provision/dryRun/dryRunCycle';
import { DryRunReport, DryRunSummary, reportLines, summaryLine } from '../../lib/provision/dryRun/dryRunReport';
import { standInKeys } from '../../lib/provision/dryRun/standIns';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { redactUrlCredentials } from '../../lib/redact';
import { broadcastDiscovery } from '../../streams/choria/discovery';
import { createLogger } from '../../streams/logOutput';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { logSettings } from '../options';
import { startChoriaClient } from './choriaClient';
import { BrokerConnection, connectToBrokers } from './connect';
import { startHelper } from './helperSetup';
import { preflight } from './preflight';
import type { ProvisionOptions } from './run';
import { provisionSources } from './sources';
import { definedFields } from '../../lib/definedFields';

/** `rxfleet provision --dry-run`'s options. */
export interface DryRunOptions extends Omit<ProvisionOptions, 'version'> {
  /** Report on the first N nodes found (by name) only. */
  limit?: number;
  json?: boolean;
}

/** Where the report goes (a spec passes its own). */
export interface DryRunOutput {
  write(line: string): void;
}

/**
 * `rxfleet provision --dry-run` (DECISIONS P23): the checks `provision` runs, the same connection,
 * one discovery round, then for each node found (the first `--limit` by name) a rehearsed cycle
 * ({@link DryRunCycle}): its inventory asked, the helper run (with `RXFLEET_DRY_RUN=1` in its
 * environment, so a helper with side effects can skip them), and a report of what would be
 * configured. It claims nothing, campaigns for nothing, announces nothing, writes no record and
 * serves no endpoint; the only requests it sends are the discovery round and one inventory per
 * node. Reports go to stdout (a table, or JSON lines with `--json`); the log to stderr at warn.
 * Exit code 0 once every node is reported, whatever it would do to them; 1 when the
 * configuration is refused or the run itself fails.
 */
export async function runDryRun(
  options: DryRunOptions,
  out: DryRunOutput = { write: (line) => process.stdout.write(`${line}\n`) },
): Promise<number> {
  const checked = await preflight(provisionSources(options));
  const config = checked.config;
  if (config === undefined) {
    for (const line of checked.lines) process.stderr.write(`${line}\n`);
    process.stderr.write('rxfleet provision --dry-run: not run: the configuration has errors\n');
    return 1;
  }
  const { level, format } = logSettings(options, 'warn');
  const logger = createLogger({ level, ...definedFields({ format }), destination: 'stderr', name: 'rxfleet-dry-run' });
  for (const line of checked.lines) logger.warn(line.replace(/^warning: /, ''));

  const registry = new Registry();
  const metrics = new ProvisionerMetrics({ registry, site: config.site });
  const scheduler = asyncScheduler;
  let broker: BrokerConnection | undefined;
  let wire: ReturnType<typeof startChoriaClient> | undefined;
  let helpers: ReturnType<typeof startHelper> | undefined;
  try {
    broker = await connectToBrokers(config, checked.choria, { logger, registry });
    const { nc, state$: connection$ } = broker.connection;
    wire = startChoriaClient({
      nc,
      plan: broker.plan,
      choria: checked.choria,
      identity: checked.choria.identity,
      connection$,
      metrics,
      registry,
      scheduler,
      logger,
    });
    helpers = startHelper(config, { gate: new PauseGate(), metrics, registry, logger, env: { ...process.env, RXFLEET_DRY_RUN: '1' } });
    const cycle = new DryRunCycle({
      config,
      client: wire.client,
      helper: helpers.helper,
      files: nodeSiteFiles,
      standIns: standInKeys(),
      scheduler,
      logger,
    });

    const found = [...(await firstValueFrom(broadcastDiscovery(wire.client, { scheduler })))].sort();
    const nodes = options.limit === undefined ? found : found.slice(0, options.limit);
    const would: Record<DryRunReport['would'], number> = { configure: 0, defer: 0, shutdown: 0, upgrade: 0, fail: 0 };
    const print = (report: DryRunReport): void => {
      would[report.would]++;
      if (options.json === true) out.write(JSON.stringify(report));
      else for (const line of reportLines(report)) out.write(line);
    };
    // `workers` nodes at once, reported in the order of their names as soon as each one's turn comes.
    const finished = new Map<number, DryRunReport>();
    let next = 0;
    await firstValueFrom(
      from(nodes).pipe(
        mergeMap((node, index) => from(cycle.report(node)).pipe(map((report) => ({ index, report }))), Math.max(1, config.workers)),
        tap(({ index, report }) => {
          finished.set(index, report);
          for (let ready = finished.get(next); ready !== undefined; ready = finished.get(next)) {
            finished.delete(next++);
            print(ready);
          }
        }),
        toArray(),
      ),
    );
    const summary: DryRunSummary = { type: 'summary', discovered: found.length, reported: nodes.length, would };
    out.write(options.json === true ? JSON.stringify(summary) : summaryLine(summary, options.limit));
    return 0;
  } catch (error) {
    process.stderr.write(`${redactUrlCredentials(`rxfleet provision --dry-run: ${errorMessage(error)}`)}\n`);
    return 1;
  } finally {
    await helpers?.close();
    wire?.close();
    await broker?.close();
    logger.flush();
  }
}
