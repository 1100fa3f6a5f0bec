import { EnricherConfigError, EnricherSettings } from '../../lib/enricher/config/config';
import { redactUrlCredentials } from '../../lib/redact';
import { loadEnrichSettings } from '../enrich/commandLine';

/** What checking an enricher configuration found: the lines to print and the counts. */
export interface EnricherValidation {
  /** `error: FILE: key: ...` and `warning: FILE: key: ...` lines, then the summary when usable. */
  lines: string[];
  errors: number;
  warnings: number;
}

function summary(file: string, s: EnricherSettings, warnings: number): string {
  const projects =
    s.projects.mode === 'all'
      ? 'every project'
      : s.projects.mode === 'list'
        ? `projects ${s.projects.names.join(',')}`
        : `projects marked ${s.projects.key}`;
  const instances =
    s.instances.mode === 'all'
      ? 'every instance'
      : `${s.instances.selectors.length} instance selector${s.instances.selectors.length === 1 ? '' : 's'}`;
  const outputs = [
    ...(s.outputs.nats !== undefined
      ? [
          `NATS (${s.outputs.nats.servers.length} server${s.outputs.nats.servers.length === 1 ? '' : 's'}, ${s.outputs.nats.subjectPrefix}.*)`,
        ]
      : []),
    ...(s.outputs.stdout ? ['stdout'] : []),
  ];
  const parts = [
    `${s.workers} worker${s.workers === 1 ? '' : 's'}`,
    projects,
    instances,
    `server ${s.incus.url ?? 'the local socket'}`,
    `outputs ${outputs.length === 0 ? 'none in the file' : outputs.join('+')}`,
    s.http === undefined ? 'no /metrics' : `/metrics on ${s.http.host ?? ''}:${s.http.port}`,
    s.storeFile === undefined ? 'no cold store' : `cold store ${s.storeFile}`,
  ];
  return redactUrlCredentials(
    `${file}: OK${warnings > 0 ? ` with ${warnings} warning${warnings === 1 ? '' : 's'}` : ''}: ${parts.join(', ')}`,
  );
}

/**
 * Checks an enricher configuration file the way `rxfleet enrich --config FILE` and
 * `rxfleet provision-incus --enrich-config FILE` do (the same function, `loadEnrichSettings`),
 * and words what it finds as `rxfleet validate` words the provisioner's: `error: FILE: key: ...`,
 * `warning: FILE: key: ...` (an unknown key with the known one it likely misspells), and
 * `FILE: OK: ...` when it can run. A file with no output is not an error: `rxfleet enrich` takes
 * one from `--nats` or `--stdout`, and `provision-incus` needs none. Never prints a secret.
 */
export function validateEnricherConfiguration(file: string): EnricherValidation {
  try {
    const { settings, warnings } = loadEnrichSettings({ config: file }, { outputRequired: false });
    const lines = warnings.map((w) => redactUrlCredentials(`warning: ${w}`));
    lines.push(summary(file, settings, warnings.length));
    return { lines, errors: 0, warnings: warnings.length };
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    return { lines: error.problems.map((p) => redactUrlCredentials(`error: ${p}`)), errors: error.problems.length, warnings: 0 };
  }
}
