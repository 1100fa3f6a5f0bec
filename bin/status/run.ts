import type { NatsConnection } from '@nats-io/transport-node';
import { redactUrlCredentials } from '../../lib/redact';
import { fleetStatus } from '../../lib/provision/status/fleetStatus';
import { historyLines, statusLines } from '../../lib/provision/status/statusText';
import { DEFAULT_RECORDS_STREAM, DEFAULT_RECORDS_SUBJECT } from '../../lib/provision/records/recordSubjects';
import { connectTool } from '../../streams/toolConnection';
import { NatsFlags, natsServers } from '../options';
import { FleetSources, readFleet, readNodeHistory } from './read';
import { definedFields } from '../../lib/definedFields';

/** The options `rxfleet status` and `rxfleet history` take, as commander parses them. */
export interface StatusOptions extends NatsFlags {
  /** The provisioner's file: its stream, subjects, buckets and NATS settings, when the flags give none. */
  config?: string;
  apiPrefix: string;
  recordsStream?: string;
  recordsSubject?: string;
  claimsBucket?: string;
  electionBucket: string;
  json?: boolean;
  watch?: boolean;
  /** `--every`, ms. */
  every: number;
  /** `history --limit`: the newest N cycles. */
  limit?: number;
}

/** Where the output goes (a spec passes its own). */
export interface StatusOutput {
  write(text: string): void;
  /** The one line a failure is. Default stderr. */
  error?(text: string): void;
  isTTY?: boolean;
}

/** The sources and the connection, from the flags and, where they say nothing, the provisioner's file. */
async function settle(options: StatusOptions): Promise<{ sources: FleetSources; nats: Parameters<typeof connectTool>[0] }> {
  let fromFile:
    | {
        stream?: string;
        subject?: string;
        claims?: string;
        servers: string[];
        user?: string;
        password?: string;
        credentials?: string;
      }
    | undefined;
  if (options.config !== undefined) {
    // Only when a file is named: the configuration's parser is most of a validate's start-up.
    const { loadProvisionerConfig } = await import('../../streams/provisionerConfigFile.js');
    const { config, problems } = loadProvisionerConfig(options.config);
    if (config === undefined)
      throw new Error(
        problems
          .filter((p) => p.severity === 'error')
          .map((p) => (p.path === options.config ? `${p.path}: ${p.message}` : `${options.config}: ${p.path}: ${p.message}`))[0],
      );
    fromFile = {
      stream: config.rxfleet.records?.stream,
      subject: config.rxfleet.records?.subject,
      claims: config.rxfleet.claimsBucket,
      servers: config.rxfleet.natsServers,
      user: config.rxfleet.natsUser,
      password: config.rxfleet.natsPassword,
      credentials: config.rxfleet.natsCredentials,
    };
  }
  const flags = natsServers(options);
  const servers = flags.servers.length > 0 ? flags.servers : (fromFile?.servers ?? []);
  if (servers.length === 0) throw new Error('no NATS server: give --nats (or RXFLEET_NATS_URL), or --config with rxfleet.nats_servers');
  const user = flags.user ?? (flags.servers.length > 0 ? undefined : fromFile?.user);
  const password = flags.password ?? (flags.servers.length > 0 ? undefined : fromFile?.password);
  const credentials = options.natsCreds ?? (flags.servers.length > 0 ? undefined : fromFile?.credentials);
  return {
    sources: {
      recordsStream: options.recordsStream ?? fromFile?.stream ?? DEFAULT_RECORDS_STREAM,
      recordsSubject: options.recordsSubject ?? fromFile?.subject ?? DEFAULT_RECORDS_SUBJECT,
      claimsBucket: options.claimsBucket ?? fromFile?.claims ?? 'RXFLEET_PROVISIONER_CLAIMS',
      electionBucket: options.electionBucket,
      apiPrefix: options.apiPrefix,
    },
    nats: {
      servers,
      name: 'rxfleet-status',
      ...definedFields({ user, password, token: options.natsToken, credentials }),
      tls: { ca: options.natsCa, cert: options.natsCert, key: options.natsKey },
    },
  };
}

/** One look: the lines (or JSON lines) to print, and whether anything was there to read. */
type Look = (nc: NatsConnection, sources: FleetSources, json: boolean) => Promise<{ lines: string[]; found: boolean }>;

const fleetLook: Look = async (nc, sources, json) => {
  const read = await readFleet(nc, sources);
  const status = fleetStatus(read);
  if (json) {
    const { instances, ...fleet } = status;
    return {
      lines: [...instances.map((i) => JSON.stringify({ type: 'instance', ...i })), JSON.stringify({ type: 'fleet', ...fleet })],
      found: read.found,
    };
  }
  return { lines: [...statusLines(status), ...read.notes.map((n) => `note: ${n}`)], found: read.found };
};

const nodeLook =
  (node: string, limit?: number): Look =>
  async (nc, sources, json) => {
    const history = await readNodeHistory(nc, sources, node);
    const records = limit === undefined ? history.records : history.records.slice(0, limit);
    if (json) return { lines: records.map((r) => JSON.stringify(r)), found: history.found };
    return { lines: [...historyLines(node, records, history.claim), ...history.notes.map((n) => `note: ${n}`)], found: history.found };
  };

/**
 * `rxfleet status [NODE]` and `rxfleet history NODE`: one look at the stream and the buckets, or
 * with `--watch` a look every `--every`, redrawn in place on a terminal (a new block each time
 * elsewhere) until a signal. Exit code 0; 1 when the broker cannot be reached or asked, or
 * nothing is there to read.
 */
export async function runStatus(
  options: StatusOptions,
  node: string | undefined,
  out: StatusOutput = stdout(),
  /** Ends `--watch` (default: SIGINT or SIGTERM). */
  stopWatching?: AbortSignal,
): Promise<number> {
  const look = node === undefined ? fleetLook : nodeLook(node, options.limit);
  let nc: NatsConnection | undefined;
  try {
    const { sources, nats } = await settle(options);
    nc = await connectTool(nats);
    const json = options.json === true;
    if (options.watch !== true) {
      const { lines, found } = await look(nc, sources, json);
      out.write(`${lines.join('\n')}\n`);
      return found ? 0 : 1;
    }
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    stopWatching?.addEventListener('abort', onSignal);
    if (stopWatching === undefined) {
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    }
    try {
      while (!stop.signal.aborted) {
        const { lines } = await look(nc, sources, json);
        // In place on a terminal: home, clear, draw. Elsewhere each look follows the last.
        if (out.isTTY === true && !json) out.write(`\x1b[H\x1b[2J${lines.join('\n')}\n`);
        else out.write(`${lines.join('\n')}\n${json ? '' : '\n'}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, options.every);
          stop.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    return 0;
  } catch (error) {
    const line = `${redactUrlCredentials(`rxfleet ${node === undefined ? 'status' : 'history'}: ${error instanceof Error ? error.message : String(error)}`)}\n`;
    if (out.error !== undefined) out.error(line);
    else process.stderr.write(line);
    return 1;
  } finally {
    await nc?.close().catch(() => undefined);
  }
}

function stdout(): StatusOutput {
  return { write: (text) => process.stdout.write(text), isTTY: process.stdout.isTTY };
}
