import type { ValidateFunction } from 'ajv';
import { availableParallelism } from 'node:os';
import { readYamlConfig } from '../../yamlConfig';
import { PROVISIONER_CONFIG_SCHEMA, RawConfig } from './configSchema';
import compiledValidator from './configValidator.generated';
import { ConfigProblem, ConfigurationError, ParseConfigOptions, ProvisionerConfig, ProvisionerConfigResult } from './configTypes';
import { describe, errorPath, schemaMessage } from '../../configProblems';
import { RuleContext, configFromDocument } from './configRules';
import { foldKeys, isMapping } from './foldKeys';

export { helperCommandProblem } from './configRules';

export { ConfigurationError } from './configTypes';
export type {
  ConfigProblem,
  LogDestination,
  ParseConfigOptions,
  ProvisionerConfig,
  ProvisionerConfigResult,
  RecordSettings,
  RxfleetSettings,
} from './configTypes';

/** Keys whose values are secrets: a problem names them and never what they hold (keys match in any case). */
const SECRET_KEYS = new Set(['token', 'broker_provisioning_password', 'rxfleet.nats_password']);

// Compiled ahead of time (scripts/compileSchemas.ts): ajv's compiler is not loaded at start.
const validateSchema = compiledValidator as unknown as ValidateFunction;

/**
 * Reads a provisioner YAML configuration and reports every problem at once, never only the first.
 *
 * Upstream parses YAML 1.1 into JSON and then Go's `json.Unmarshal`; rxfleet keeps what a user of
 * it relies on and does better where DECISIONS says so:
 * - YAML 1.1 (`yes`/`no` are booleans) with merge keys, as go-yaml v2; a key given as `null` keeps
 *   its default, as Go does;
 * - keys match case-insensitively (`Workers` is `workers`), as Go's JSON decoding;
 * - an unknown key is a warning naming it (upstream ignores it silently); `broker_port` and
 *   `rego_policy` are accepted and ignored with a deprecation warning (P15);
 * - a type mismatch or an invalid value is an error naming the key's path and what was expected,
 *   without echoing the value of a secret;
 * - a file upstream starts with, rxfleet starts with: what upstream would only discover while
 *   provisioning each node (no helper or one that cannot be split, jwt without `jwt_verify_cert`,
 *   ed25519 without `jwt_signing_key`, upgrades without a repository), a log level it does not
 *   know (it logs at warn) and a lifecycle component with white space (no startup events) are
 *   warnings, and rxfleet then behaves as upstream does;
 * - a value upstream would misread is refused with the reason: a negative `workers` (no worker
 *   at all), a deny-list pattern that does not compile (upstream silently never matches it, so the
 *   check it asks for is off).
 *
 * `config` is present exactly when no problem is an error.
 */
export function parseProvisionerConfig(text: string, options: ParseConfigOptions = {}): ProvisionerConfigResult {
  const { file, cpus = availableParallelism(), exists = () => true } = options;
  const problems: ConfigProblem[] = [];
  const error = (path: string, message: string): void => void problems.push({ path, message, severity: 'error' });
  const warn = (path: string, message: string): void => void problems.push({ path, message, severity: 'warning' });

  // yaml's own messages quote the text (an unquoted `token: *secret` is an "unresolved alias" named
  // after the secret): readYamlConfig says what is wrong in its own words, with the key's path.
  const read = readYamlConfig(text, {
    version: '1.1',
    merge: true,
    maxAliasCount: 100,
    secret: (path) => SECRET_KEYS.has(path.toLowerCase()),
  });
  if (read.problems.length > 0) {
    for (const p of read.problems) error(p.path === '' ? (file ?? 'configuration') : p.path, p.message);
    return { config: undefined, problems };
  }
  const raw: unknown = read.value ?? {};
  if (!isMapping(raw)) {
    error(file ?? 'configuration', `expected a mapping of keys to values at the top level, got ${describe(raw)}`);
    return { config: undefined, problems };
  }

  const folded = foldKeys(raw, warn);
  const { refused, usable } = checkSchema(folded, error);
  const failed = (): boolean => problems.some((p) => p.severity === 'error');
  return {
    config: configFromDocument(folded as unknown as RawConfig, { error, warn, usable, refused, exists, cpus, failed }, file),
    problems,
  };
}

/**
 * Runs the schema, reporting each refused key once. Its errors do not stop the rules: every
 * problem is reported in one run, and a rule skips a key the schema refused (`usable`), whose
 * value may not even be of the right type.
 */
function checkSchema(
  folded: Record<string, unknown>,
  error: (path: string, message: string) => void,
): Pick<RuleContext, 'refused' | 'usable'> {
  const refused = new Set<string>();
  if (!validateSchema(folded)) {
    for (const e of validateSchema.errors ?? []) {
      const path = errorPath(e);
      if (refused.has(path)) continue;
      refused.add(path);
      error(path, schemaMessage(PROVISIONER_CONFIG_SCHEMA, e));
    }
  }
  const usable = (path: string): boolean =>
    ![...refused].some(
      (r) => r === path || path.startsWith(`${r}.`) || path.startsWith(`${r}[`) || r.startsWith(`${path}.`) || r.startsWith(`${path}[`),
    );
  return { refused, usable };
}

/** The config of a result without errors; otherwise throws {@link ConfigurationError} naming every error. */
export function requireValidConfig(result: ProvisionerConfigResult): ProvisionerConfig {
  if (result.config === undefined) throw new ConfigurationError(result.problems);
  return result.config;
}
