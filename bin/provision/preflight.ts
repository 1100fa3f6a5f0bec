/**
 * The checks `rxfleet provision` runs before it starts and `rxfleet validate` runs on its own: one
 * function, so the two always agree. Both print the same lines (`error: FILE: key: message`) and
 * both refuse (provision does not start, validate exits 1) on the same errors.
 */
import { existsSync } from 'node:fs';
import { ListenAddress } from '../../lib/addresses';
import { ChoriaClientConfig, parseChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ConfigProblem, ProvisionerConfig } from '../../lib/provision/config/config';
import { redactUrlCredentials } from '../../lib/redact';
import { connectionPlan } from '../../streams/choria/connectionPlan';
import { defaultChoriaConfigPath, hostFqdn, loadChoriaClientConfig } from '../../streams/choria/clientConfigFile';
import { helperExecutableProblem } from '../../streams/helper/helperExecutable';
import { loadProvisionerConfig } from '../../streams/provisionerConfigFile';
import { inspectPkcs11Token } from './pkcs11Check';

/** Settings given on the command line that replace the file's (`--nats`, `--monitor`...). */
export interface ProvisionOverrides {
  natsServers?: string[];
  natsUser?: string;
  natsPassword?: string;
  natsCredentials?: string;
  /** `null`: no endpoint. */
  monitor?: ListenAddress | null;
}

/** What the provisioner is started from. */
export interface ProvisionSources {
  /** The provisioner's YAML file (`--config`). */
  config: string;
  /** The Choria client configuration (`--choria-config`); default go-choria's places. */
  choriaConfig?: string;
  overrides?: ProvisionOverrides;
}

/** One problem and the file it belongs to. */
export interface PreflightProblem extends ConfigProblem {
  file: string;
}

/** What a check is given: both files read, the flags applied. */
export interface PreflightContext {
  sources: ProvisionSources;
  /** The provisioner configuration with the overrides applied. */
  config: ProvisionerConfig;
  choria: ChoriaClientConfig;
  choriaFile: string;
}

/**
 * A check that needs both files read and valid on their own: it returns its problems, each with
 * the file it belongs to. Add a check here and both `validate` and `provision` run it.
 */
export type PreflightCheck = (context: PreflightContext) => PreflightProblem[];

/**
 * Where to connect and as whom (DECISIONS: what `provision` refuses, `validate` refuses): no
 * broker, TLS material missing, the `choria` provider's files missing or unreadable.
 */
const connectionCheck: PreflightCheck = ({ config, choria, choriaFile, sources }) =>
  connectionPlan(config, choria).problems.map((p) => ({ ...p, file: p.path.startsWith('rxfleet.') ? sources.config : choriaFile }));

/**
 * The helper can be run (DECISIONS: a file the Go provisioner starts with, rxfleet starts with,
 * warning where every node would fail): the Go provisioner starts with a helper that does not
 * exist or cannot be executed and then fails every node, so this is a warning, the same line at
 * start and in `validate` (which `--strict` makes fail).
 */
const helperCheck: PreflightCheck = ({ config, sources }) => {
  const problem = helperExecutableProblem(config.helper);
  return problem === undefined
    ? []
    : [{ file: sources.config, path: 'helper', severity: 'warning', message: `${problem}: every node will fail until it can be run` }];
};

/**
 * The `pkcs11` provider's token, opened as start-up opens it (never asking for the PIN): its
 * module, slot, objects, the PIN file, OpenSSL's pkcs11 engine.
 */
const pkcs11Check: PreflightCheck = (context) => {
  const { token, problems } = inspectPkcs11Token(context);
  token?.close();
  return problems;
};

/** Every check, in the order their lines are printed. */
export const PREFLIGHT_CHECKS: PreflightCheck[] = [connectionCheck, pkcs11Check, helperCheck];

/** The outcome: the configuration to run with (when nothing is an error) and every problem. */
export interface Preflight {
  /** Present exactly when no problem is an error. */
  config: ProvisionerConfig | undefined;
  choria: ChoriaClientConfig;
  choriaFile: string;
  problems: PreflightProblem[];
  /** One line per problem, `error: FILE: key: message`; no secret in any of them. */
  lines: string[];
  errors: number;
  warnings: number;
}

/** A problem as a line: the file, then the key's path unless the path already names the file. */
export function problemLine(problem: PreflightProblem): string {
  const where =
    problem.path === problem.file || problem.path.startsWith(`${problem.file}:`) ? problem.path : `${problem.file}: ${problem.path}`;
  return redactUrlCredentials(`${problem.severity}: ${where}: ${problem.message}`);
}

function applyOverrides(config: ProvisionerConfig, overrides: ProvisionOverrides = {}): ProvisionerConfig {
  const rxfleet = { ...config.rxfleet };
  if (overrides.natsServers !== undefined && overrides.natsServers.length > 0) rxfleet.natsServers = overrides.natsServers;
  if (overrides.natsUser !== undefined) rxfleet.natsUser = overrides.natsUser;
  if (overrides.natsPassword !== undefined) rxfleet.natsPassword = overrides.natsPassword;
  if (overrides.natsCredentials !== undefined) rxfleet.natsCredentials = overrides.natsCredentials;
  if (overrides.monitor === undefined) return { ...config, rxfleet };
  rxfleet.monitorHost = overrides.monitor?.host;
  return { ...config, rxfleet, monitorPort: overrides.monitor === null ? 0 : overrides.monitor.port };
}

/**
 * Reads both configurations as `rxfleet provision` does and runs every check: the provisioner
 * file (every problem with its key's path), the Choria client configuration (the one named, else
 * the first at go-choria's places, else defaults with a warning, as the daemon runs with them),
 * then, when both are usable, every {@link PREFLIGHT_CHECKS} entry on them with the command-line
 * overrides applied.
 */
export async function preflight(sources: ProvisionSources): Promise<Preflight> {
  const provisioner = loadProvisionerConfig(sources.config);
  const problems: PreflightProblem[] = provisioner.problems.map((p) => ({ ...p, file: sources.config }));

  const choriaFile = sources.choriaConfig ?? defaultChoriaConfigPath();
  let choria: ChoriaClientConfig;
  let choriaUsable = true;
  if (sources.choriaConfig !== undefined || existsSync(choriaFile)) {
    const loaded = await loadChoriaClientConfig(choriaFile);
    choria = loaded.config;
    problems.push(...loaded.problems.map((p) => ({ ...p, file: choriaFile })));
  } else {
    choria = parseChoriaClientConfig('', { file: choriaFile, defaultIdentity: await hostFqdn() }).config;
    // The Go provisioner refuses to start without one (its --choria-config must be an existing
    // file, go-choria's UserConfig() by default). rxfleet's own broker settings are the one way
    // to run without it, since they say where to connect; upstream has no such setting.
    const brokersNamed = (sources.overrides?.natsServers?.length ?? 0) > 0 || (provisioner.config?.rxfleet.natsServers.length ?? 0) > 0;
    choriaUsable = brokersNamed;
    problems.push(
      brokersNamed
        ? {
            file: choriaFile,
            path: choriaFile,
            severity: 'warning',
            message: `no Choria client configuration found at the default locations; using go-choria's defaults (identity ${choria.identity}) with the brokers rxfleet.nats_servers names: pass --choria-config`,
          }
        : {
            file: choriaFile,
            path: choriaFile,
            severity: 'error',
            message:
              'no Choria client configuration: none of ~/.choriarc, ~/.mcollective, /etc/choria/client.conf, /usr/local/etc/choria/client.conf or this file exists; pass --choria-config FILE (the Go provisioner does not start without one either)',
          },
    );
  }

  let config: ProvisionerConfig | undefined;
  if (provisioner.config !== undefined && choriaUsable) {
    config = applyOverrides(provisioner.config, sources.overrides);
    const context: PreflightContext = { sources, config, choria, choriaFile };
    for (const check of PREFLIGHT_CHECKS) problems.push(...check(context));
  }
  const errors = problems.filter((p) => p.severity === 'error').length;
  return {
    config: errors === 0 ? config : undefined,
    choria,
    choriaFile,
    problems,
    lines: problems.map(problemLine),
    errors,
    warnings: problems.length - errors,
  };
}
