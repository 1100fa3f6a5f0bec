import { Command } from 'commander';
import type { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import type { ProvisionerConfig } from '../../lib/provision/config/config';
import { redactUrlCredentials } from '../../lib/redact';
import { ProvisionFlags, addProvisionSourceOptions, provisionSources } from '../provision/sources';
import { definedFields } from '../../lib/definedFields';

/** What `rxfleet validate` prints and how it exits. */
export interface ValidationReport {
  lines: string[];
  exitCode: 0 | 1;
}

/** Options of `rxfleet validate`: what `rxfleet provision` is started from, and `--strict`. */
export interface ValidateOptions extends ProvisionFlags {
  /** Warnings fail the check too. */
  strict?: boolean;
  /** The pid file `provision --pid` would write: checked that it can be. */
  pid?: string;
}

/** `rxfleet validate`'s flags: the provisioner's (its `--config` optional here) and the enricher's file. */
type ValidateFlags = Omit<ValidateOptions, 'config'> & { config?: string; enrichConfig?: string };

/**
 * Runs the checks `rxfleet provision` runs before it starts (the same function, {@link preflight})
 * and reports every problem, one line each, the same lines provision prints. Exit code 1 when any
 * problem would stop the daemon (or any problem at all with `strict`); otherwise 0 and a one-line
 * summary. Secrets are never printed.
 */
export async function validateConfiguration(options: ValidateOptions): Promise<ValidationReport> {
  // Loaded when it runs: the configuration's schema and parser are most of validate's start-up.
  const { preflight } = await import('../provision/preflight.js');
  const { startupLines } = await import('../provision/startupFiles.js');
  const summaryParts = await summaryModules();
  const sources = provisionSources(options);
  const result = await preflight(sources);
  // What provision opens before connecting: the log file, the pid file, the monitor port.
  const startup =
    result.config === undefined
      ? []
      : await startupLines({
          configFile: options.config,
          config: result.config,
          ...definedFields({ pidFile: options.pid }),
          monitorFromFlag: sources.overrides?.monitor !== undefined,
        });
  const lines = [...result.lines, ...startup];
  const errors = result.errors + startup.length;
  const { warnings } = result;
  if (errors > 0 || result.config === undefined || (options.strict === true && warnings > 0)) {
    lines.push(`${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`);
    return { lines, exitCode: 1 };
  }
  const { validateSecurityLine } = await import('../provision/securitySummary.js');
  lines.push(validateSecurityLine({ sources, config: result.config, choria: result.choria, choriaFile: result.choriaFile }));
  lines.push(summary(summaryParts, options.config, result.config, result.choria, warnings));
  return { lines, exitCode: 0 };
}

/** What the summary line reads the configuration with, loaded with the checks. */
async function summaryModules() {
  const { helperCommandProblem } = await import('../../lib/provision/config/config.js');
  const { splitHelperCommand } = await import('../../lib/provision/helper/helperCommand.js');
  const { brokerSource } = await import('../../lib/choria/brokerSource.js');
  return { helperCommandProblem, splitHelperCommand, brokerSource };
}

function summary(
  modules: Awaited<ReturnType<typeof summaryModules>>,
  file: string,
  c: ProvisionerConfig,
  choria: ChoriaClientConfig,
  warnings: number,
): string {
  const { helperCommandProblem, splitHelperCommand, brokerSource } = modules;
  const helperProblem = (helper: string): string | undefined => (helper.trim() === '' ? 'empty' : helperCommandProblem(helper));
  const features = Object.entries(c.features)
    .filter(([, on]) => on)
    .map(([name]) => name);
  const parts = [
    `${c.workers} worker${c.workers === 1 ? '' : 's'}`,
    `interval ${c.interval}`,
    `features ${features.length === 0 ? 'none' : features.join('+')}`,
    // Only the executable: arguments could carry a secret.
    helperProblem(c.helper) === undefined ? `helper ${splitHelperCommand(c.helper)[0]}` : 'no usable helper',
    `site ${JSON.stringify(c.site)}`,
    c.monitorPort === 0
      ? 'no /metrics'
      : c.rxfleet.monitorHost === undefined
        ? `/metrics on port ${c.monitorPort}`
        : `/metrics on ${c.rxfleet.monitorHost}:${c.monitorPort}`,
    c.leaderElection ? 'leader election on' : 'no leader election',
  ];
  if (c.rxfleet.incus !== undefined)
    parts.push(`Incus feed from ${c.rxfleet.incus.subjectPrefix}.*.instance.> with identity ${c.rxfleet.incus.identity.text}`);
  const brokers = brokerSource(choria, c.rxfleet.natsServers);
  const nats =
    brokers.kind === 'srv'
      ? `NATS servers from DNS SRV records in ${brokers.domain ?? "the host's domain"} (else puppet:4222)`
      : `${brokers.servers.length} NATS server${brokers.servers.length === 1 ? '' : 's'}${brokers.kind === 'default' ? ' (puppet:4222)' : ''}`;
  const choriaPart = `; choria config ${choria.file ?? '(defaults)'}: identity ${choria.identity}, ${nats}`;
  return redactUrlCredentials(
    `${file}: OK${warnings > 0 ? ` with ${warnings} warning${warnings === 1 ? '' : 's'}` : ''}: ${parts.join(', ')}${choriaPart}`,
  );
}

/** `rxfleet validate --config FILE [--choria-config FILE] [--enrich-config FILE] [--strict]`. */
export function registerValidate(program: Command): void {
  const command = program
    .command('validate')
    .usage('--config <file> [options] | --enrich-config <file>')
    .description(
      "run the checks rxfleet provision runs before it starts, and print every problem with its file and key (the same lines provision prints); --enrich-config checks the enricher's file as rxfleet enrich and provision-incus do",
    );
  addProvisionSourceOptions(command)
    .option('--enrich-config <file>', "the enricher's configuration (rxfleet enrich --config, provision-incus --enrich-config)")
    .option('--strict', 'fail on warnings too')
    .option('--pid <file>', 'check that the pid file provision --pid would write can be written');
  // Either file is enough: the enricher's alone is checked without a provisioner's.
  const configOption = command.options.find((o) => o.long === '--config');
  if (configOption !== undefined) configOption.mandatory = false;
  command.action(async (flags: ValidateFlags) => {
    if (flags.config === undefined && flags.enrichConfig === undefined)
      command.error("error: required option '--config <file>' not specified (or --enrich-config <file> for the enricher's file)");
    // The enricher's checks load only for its file: they are another schema and parser.
    const enricher =
      flags.enrichConfig === undefined
        ? undefined
        : (await import('./validateEnricher.js')).validateEnricherConfiguration(flags.enrichConfig);
    const provisioner = flags.config === undefined ? undefined : await validateConfiguration({ ...flags, config: flags.config });
    const lines = [...(provisioner?.lines ?? []), ...(enricher?.lines ?? [])];
    for (const line of lines) console.log(line);
    const enricherFails = enricher !== undefined && (enricher.errors > 0 || (flags.strict === true && enricher.warnings > 0));
    if (provisioner === undefined && enricher !== undefined && enricherFails) {
      console.log(
        `${enricher.errors} error${enricher.errors === 1 ? '' : 's'}, ${enricher.warnings} warning${enricher.warnings === 1 ? '' : 's'}`,
      );
    }
    process.exitCode = (provisioner?.exitCode ?? 0) === 1 || enricherFails ? 1 : 0;
  });
}
