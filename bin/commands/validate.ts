import { Command } from 'commander';
import { existsSync } from 'node:fs';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { brokerSource } from '../../lib/choria/brokerSource';
import { defaultChoriaConfigPath, loadChoriaClientConfig } from '../../streams/choria/clientConfigFile';
import { ConfigProblem, ProvisionerConfig } from '../../lib/provision/config';
import { loadProvisionerConfig } from '../../streams/provisionerConfigFile';
import { splitHelperCommand } from '../../lib/provision/helperCommand';
import { helperCommandProblem } from '../../lib/provision/config';
import { connectionPlan } from '../../streams/choria/connectionPlan';

/** What `rxfleet validate` prints and how it exits. */
export interface ValidationReport {
  lines: string[];
  exitCode: 0 | 1;
}

/** Options of `rxfleet validate`. */
export interface ValidateOptions {
  config: string;
  choriaConfig?: string;
  /** Warnings fail the check too. */
  strict?: boolean;
}

/**
 * Checks a provisioner configuration and its Choria client configuration the way `rxfleet
 * provision` would read them, and reports every problem (one line each, with the key's path) rather
 * than the first. Exit code 1 when any problem would stop the daemon (or any problem at all with
 * `strict`); otherwise 0 and a one-line summary. Secrets are never printed.
 */
export async function validateConfiguration(options: ValidateOptions): Promise<ValidationReport> {
  const provisioner = loadProvisionerConfig(options.config);
  const problems: ConfigProblem[] = provisioner.problems.map((p) => ({ ...p, path: p.path === options.config ? p.path : `${options.config}: ${p.path}` }));

  const explicit = options.choriaConfig !== undefined;
  const choriaFile = options.choriaConfig ?? defaultChoriaConfigPath();
  let choria: ChoriaClientConfig | undefined;
  if (explicit || existsSync(choriaFile)) {
    const result = await loadChoriaClientConfig(choriaFile);
    choria = result.config;
    problems.push(...result.problems);
  } else {
    problems.push({ path: choriaFile, message: 'no Choria client configuration found at the default locations; pass --choria-config', severity: 'warning' });
  }

  // What `rxfleet provision` checks before connecting: brokers, TLS material, the v2 security files.
  if (provisioner.config !== undefined && choria !== undefined) problems.push(...connectionPlan(provisioner.config, choria).problems);

  const lines = problems.map((p) => `${p.severity}: ${p.path}: ${p.message}`);
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.length - errors;
  const failed = errors > 0 || (options.strict === true && warnings > 0);
  if (failed) {
    lines.push(`${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}`);
    return { lines, exitCode: 1 };
  }
  lines.push(summary(options.config, provisioner.config as ProvisionerConfig, choria, warnings));
  return { lines, exitCode: 0 };
}

function helperProblem(helper: string): string | undefined {
  return helper.trim() === '' ? 'empty' : helperCommandProblem(helper);
}

function summary(file: string, c: ProvisionerConfig, choria: ChoriaClientConfig | undefined, warnings: number): string {
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
    c.monitorPort === 0 ? 'no /metrics' : `/metrics on port ${c.monitorPort}`,
    c.leaderElection ? 'leader election on' : 'no leader election',
  ];
  let choriaPart = '';
  if (choria !== undefined) {
    const brokers = brokerSource(choria, c.rxfleet.natsServers);
    const nats =
      brokers.kind === 'srv' ? `NATS servers from DNS SRV records in ${brokers.domain ?? "the host's domain"} (else puppet:4222)` : `${brokers.servers.length} NATS server${brokers.servers.length === 1 ? '' : 's'}${brokers.kind === 'default' ? ' (puppet:4222)' : ''}`;
    choriaPart = `; choria config ${choria.file}: identity ${choria.identity}, ${nats}`;
  }
  return `${file}: OK${warnings > 0 ? ` with ${warnings} warning${warnings === 1 ? '' : 's'}` : ''}: ${parts.join(', ')}${choriaPart}`;
}

/** `rxfleet validate --config FILE [--choria-config FILE] [--strict]`. */
export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check a provisioner configuration (and its Choria client configuration) and print every problem with its path')
    .requiredOption('--config <file>', 'the provisioner YAML configuration')
    .option('--choria-config <file>', 'the Choria client configuration (default: the first of ~/.choriarc, ~/.mcollective, /etc/choria/client.conf, ...)')
    .option('--strict', 'fail on warnings too', false)
    .action(async (options: ValidateOptions) => {
      const report = await validateConfiguration(options);
      for (const line of report.lines) console.log(line);
      process.exitCode = report.exitCode;
    });
}
