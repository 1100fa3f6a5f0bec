import { EnricherConfigError, EnricherSettings } from '../../lib/enricher/config/config';
import { redactUrlCredentials } from '../../lib/redact';
import { loadEnrichSettings } from '../enrich/commandLine';
import { formatByteSize } from '../../lib/enricher/config/byteSize';
import { formatGoDuration } from '../../lib/duration';

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
    ...(s.outputs.jetstream !== undefined
      ? [
          `JetStream (${s.outputs.jetstream.servers.length} server${s.outputs.jetstream.servers.length === 1 ? '' : 's'}, ${s.outputs.jetstream.subjectPrefix}.*)`,
        ]
      : []),
    ...(s.outputs.state !== undefined ? ['state bucket'] : []),
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

const replicas = (n: number): string => `${n} replica${n === 1 ? '' : 's'}`;
const ms = (value: number): string => (value === 0 ? 'for ever' : formatGoDuration(value));

/** What the durable outputs and the standby will check and make at start, one line each. */
function durableLines(file: string, s: EnricherSettings): string[] {
  const lines: string[] = [];
  const js = s.outputs.jetstream;
  if (js !== undefined) {
    const made = js.create
      ? `created if missing with ${replicas(js.replicas)}, max age ${ms(js.maxAge)}, max bytes ${js.maxBytes === 0 ? 'no limit' : formatByteSize(js.maxBytes)}, duplicate window ${formatGoDuration(js.duplicateWindow)}`
      : 'must exist: checked at start';
    lines.push(
      `${file}: JetStream stream ${js.stream} capturing ${js.subjectPrefix}.> (${made}); each event held until acknowledged (${formatGoDuration(js.ackTimeout)} per try, ${js.maxPending} at once, ${js.maxHeld} waiting)`,
    );
  }
  const state = s.outputs.state;
  if (state !== undefined)
    lines.push(
      `${file}: state bucket ${state.bucket}, key <project>.<name> (${state.create ? `created if missing with ${replicas(state.replicas)}` : 'must exist: checked at start'})`,
    );
  const standby = s.standby;
  if (standby !== undefined)
    lines.push(
      `${file}: standby: campaigns for ${standby.bucket}/${standby.key} as ${standby.identity ?? 'the host name'} (${standby.create ? `bucket created if missing with TTL ${formatGoDuration(standby.ttl)}, ${replicas(standby.replicas)}` : 'bucket must exist'})`,
    );
  return lines;
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
    lines.push(summary(file, settings, warnings.length), ...durableLines(file, settings));
    return { lines, errors: 0, warnings: warnings.length };
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    return { lines: error.problems.map((p) => redactUrlCredentials(`error: ${p}`)), errors: error.problems.length, warnings: 0 };
  }
}
