import { Agent, ClientRequest, ClientRequestArgs, IncomingMessage, request } from 'node:http';
import { Duplex } from 'node:stream';
import { Counter, Histogram, Registry } from 'prom-client';
import { IncusApiError, IncusInstance, IncusInstanceState, IncusNetwork, IncusProject, IncusReader } from '../../lib/incus/api';
import { parseResourceUrl } from '../../lib/incus/resourceUrl';
import { Logger, silentLogger } from '../../lib/logger';
import { IncusEndpoint, IncusEndpointOptions, toEndpoint } from './incusEndpoint';

/** Options for {@link IncusRestClient}. */
export interface IncusRestClientOptions {
  /** The server (an endpoint, or what makes one). Default: the local socket. */
  endpoint?: IncusEndpoint | IncusEndpointOptions;
  /** How long one call may take, connection included, before it fails with status 0. Default 10 s. */
  readTimeoutMs?: number;
  /** The largest answer accepted; a longer one fails the call. Default 64 MiB. */
  maxResponseBytes?: number;
  /** Idle keep-alive connections are closed after this long. Default 30 s. */
  idleTimeoutMs?: number;
  logger?: Logger;
  /** Where `incus_api_requests_total` and `incus_api_request_seconds` are registered. Default: a private registry. */
  registry?: Registry;
}

/** What each call is counted as in the metrics. */
type Call = 'instance' | 'instance-state' | 'network' | 'project' | 'project-names' | 'network-names' | 'instance-names';

type Outcome = 'ok' | 'not_found' | 'error' | 'timeout' | 'aborted';

/** The server's answer envelope (`/1.0/...`). */
interface Envelope {
  type?: unknown;
  error?: unknown;
  error_code?: unknown;
  metadata?: unknown;
}

class CallFailure extends IncusApiError {
  constructor(
    message: string,
    status: number,
    readonly outcome: Outcome,
    options?: { cause?: unknown },
  ) {
    super(message, status, options);
    this.name = 'IncusApiError';
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Connections a keep-alive agent opens through the endpoint, so the agent never dials on its own. */
class EndpointAgent extends Agent {
  constructor(
    private readonly endpoint: IncusEndpoint,
    idleTimeoutMs: number,
  ) {
    super({ keepAlive: true, timeout: idleTimeoutMs });
  }

  override createConnection(options: ClientRequestArgs, callback?: (error: Error | null, socket: Duplex) => void): undefined {
    return this.endpoint.createConnection(options, (error, socket) => callback?.(error, socket as Duplex));
  }
}

function metric<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/**
 * Reads an Incus or LXD server's REST API (`/1.0/...`) over its unix socket or over https with a
 * client certificate and a pinned server certificate: the {@link IncusReader} the enricher reads
 * through.
 *
 * Guarantees, for every call:
 * - It settles once: with the answer's `metadata` for a `sync` answer, else with an
 *   {@link IncusApiError} whose `status` is the server's `error_code` (404 is `notFound`), or the
 *   HTTP status for an answer that is not an envelope, or 0 when no answer came (connection
 *   refused, pin mismatch, `readTimeoutMs` passed, `signal` aborted). Messages name the request
 *   (`GET /1.0/instances/c1?project=p`) and never a credential.
 * - Project-scoped calls send `?project=`; the default project is named too.
 * - Maps the server may send as `null` (`config`, `devices`, `addresses`) arrive as `{}`/`[]`.
 * - Connections are kept alive and reused; a request that meets a kept connection the server had
 *   just closed is sent once more on a fresh one (GETs are idempotent).
 * - Aborting `signal` destroys the request at once; a timed-out call does too.
 */
export class IncusRestClient implements IncusReader {
  readonly endpoint: IncusEndpoint;
  private readonly agent: EndpointAgent;
  private readonly readTimeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly logger: Logger;
  private readonly requests: Counter<'call' | 'result'>;
  private readonly seconds: Histogram<'call'>;

  constructor(options: IncusRestClientOptions = {}) {
    this.endpoint = toEndpoint(options.endpoint);
    this.readTimeoutMs = options.readTimeoutMs ?? 10_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 64 * 1024 * 1024;
    this.logger = options.logger ?? silentLogger;
    this.agent = new EndpointAgent(this.endpoint, options.idleTimeoutMs ?? 30_000);
    const registry = options.registry ?? new Registry();
    this.requests = metric(
      registry,
      'incus_api_requests_total',
      () =>
        new Counter({
          name: 'incus_api_requests_total',
          help: 'Incus REST calls by call and result (ok, not_found, error, timeout, aborted)',
          labelNames: ['call', 'result'],
          registers: [registry],
        }),
    );
    this.seconds = metric(
      registry,
      'incus_api_request_seconds',
      () =>
        new Histogram({
          name: 'incus_api_request_seconds',
          help: 'Incus REST call duration, answered calls only',
          labelNames: ['call'],
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers: [registry],
        }),
    );
  }

  async getInstance(project: string, name: string, signal?: AbortSignal): Promise<IncusInstance> {
    const instance = await this.object('instance', `/1.0/instances/${encodeURIComponent(name)}${projectQuery(project)}`, signal);
    instance.config = mapOrEmpty(instance.config);
    instance.devices = mapOrEmpty(instance.devices);
    return instance as unknown as IncusInstance;
  }

  async getInstanceState(project: string, name: string, signal?: AbortSignal): Promise<IncusInstanceState> {
    const state = await this.object('instance-state', `/1.0/instances/${encodeURIComponent(name)}/state${projectQuery(project)}`, signal);
    if (isObject(state.network)) {
      for (const nic of Object.values(state.network)) if (isObject(nic) && !Array.isArray(nic.addresses)) nic.addresses = [];
    }
    return state as unknown as IncusInstanceState;
  }

  async getNetwork(project: string, name: string, signal?: AbortSignal): Promise<IncusNetwork> {
    const network = await this.object('network', `/1.0/networks/${encodeURIComponent(name)}${projectQuery(project)}`, signal);
    network.config = mapOrEmpty(network.config);
    return network as unknown as IncusNetwork;
  }

  async getProject(name: string, signal?: AbortSignal): Promise<IncusProject> {
    const project = await this.object('project', `/1.0/projects/${encodeURIComponent(name)}`, signal);
    project.config = mapOrEmpty(project.config);
    return project as unknown as IncusProject;
  }

  listProjectNames(signal?: AbortSignal): Promise<string[]> {
    return this.names('project-names', '/1.0/projects', signal);
  }

  listNetworkNames(project: string, signal?: AbortSignal): Promise<string[]> {
    return this.names('network-names', `/1.0/networks${projectQuery(project)}`, signal);
  }

  listInstanceNames(project: string, signal?: AbortSignal): Promise<string[]> {
    return this.names('instance-names', `/1.0/instances${projectQuery(project)}`, signal);
  }

  /** Closes every kept connection; calls made afterwards open new ones. */
  close(): void {
    this.agent.destroy();
  }

  private object(call: Call, path: string, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    return this.get(call, path, signal, (metadata) => (isObject(metadata) ? metadata : 'is not an object'));
  }

  private names(call: Call, path: string, signal: AbortSignal | undefined): Promise<string[]> {
    return this.get(call, path, signal, (metadata) =>
      Array.isArray(metadata) && metadata.every((url) => typeof url === 'string')
        ? metadata.map((url: string) => parseResourceUrl(url).name)
        : 'is not a list of URLs',
    );
  }

  /** One call, counted once and timed, its metadata checked by `shape` (a string says what is wrong). */
  private async get<T>(call: Call, path: string, signal: AbortSignal | undefined, shape: (metadata: unknown) => T | string): Promise<T> {
    const started = process.hrtime.bigint();
    const elapsed = (): number => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      const value = shape(await this.send(path, signal, Date.now() + this.readTimeoutMs, true));
      if (typeof value === 'string') throw new CallFailure(`GET ${path}: the answer's metadata ${value}`, 0, 'error');
      this.requests.inc({ call, result: 'ok' });
      this.seconds.observe({ call }, elapsed());
      return value;
    } catch (error) {
      const failure = error as CallFailure;
      this.requests.inc({ call, result: failure.outcome });
      if (failure.outcome === 'not_found' || failure.outcome === 'error') this.seconds.observe({ call }, elapsed());
      this.logger.debug({ call, status: failure.status, err: failure.message }, 'incus call failed');
      throw failure;
    }
  }

  private send(path: string, signal: AbortSignal | undefined, deadline: number, mayRetry: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const what = `GET ${path}`;
      if (signal?.aborted) {
        reject(new CallFailure(`${what} aborted`, 0, 'aborted', { cause: signal.reason }));
        return;
      }
      let settled = false;
      const req: ClientRequest = request({
        agent: this.agent,
        method: 'GET',
        path,
        headers: { host: this.endpoint.host, accept: 'application/json', 'user-agent': 'rxfleet' },
      });
      const finish = (): void => {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (failure: CallFailure): void => {
        if (settled) return;
        finish();
        req.destroy();
        reject(failure);
      };
      const onAbort = (): void => fail(new CallFailure(`${what} aborted`, 0, 'aborted', { cause: signal?.reason }));
      const timeoutMs = Math.max(0, deadline - Date.now());
      const timer = setTimeout(() => fail(new CallFailure(`${what}: no answer within ${this.readTimeoutMs} ms`, 0, 'timeout')), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });

      req.on('error', (error: NodeJS.ErrnoException) => {
        if (settled) return;
        // A kept connection the server closed while it sat idle fails the moment it is reused;
        // that says nothing about the server, so the request goes once more on a new connection.
        if (mayRetry && req.reusedSocket === true && ['ECONNRESET', 'EPIPE'].includes(error.code ?? '')) {
          finish();
          resolve(this.send(path, signal, deadline, false));
          return;
        }
        fail(new CallFailure(`${what}: ${error.message}`, 0, 'error', { cause: error }));
      });
      req.on('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.maxResponseBytes) fail(new CallFailure(`${what}: answer larger than ${this.maxResponseBytes} bytes`, 0, 'error'));
          else chunks.push(chunk);
        });
        res.on('error', (error) => fail(new CallFailure(`${what}: ${error.message}`, 0, 'error', { cause: error })));
        res.on('end', () => {
          if (settled) return;
          const answer = settle(what, res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'));
          if (answer instanceof CallFailure) {
            fail(answer);
          } else {
            finish();
            resolve(answer.metadata);
          }
        });
      });
      req.end();
    });
  }
}

function projectQuery(project: string): string {
  return `?project=${encodeURIComponent(project)}`;
}

function mapOrEmpty(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}

/** One answer turned into its metadata or the failure it reports. */
function settle(what: string, httpStatus: number, body: string): { metadata: unknown } | CallFailure {
  let envelope: Envelope;
  try {
    envelope = JSON.parse(body) as Envelope;
  } catch {
    return new CallFailure(`${what}: the answer is not JSON (HTTP ${httpStatus})`, httpStatus, outcomeOf(httpStatus));
  }
  if (!isObject(envelope))
    return new CallFailure(`${what}: the answer is not an envelope (HTTP ${httpStatus})`, httpStatus, outcomeOf(httpStatus));
  if (envelope.type === 'error' || httpStatus >= 400) {
    const status = typeof envelope.error_code === 'number' && envelope.error_code > 0 ? envelope.error_code : httpStatus;
    const message = typeof envelope.error === 'string' && envelope.error !== '' ? envelope.error : `HTTP ${httpStatus}`;
    return new CallFailure(`${what}: ${message} (${status})`, status, outcomeOf(status));
  }
  if (envelope.type !== 'sync')
    return new CallFailure(`${what}: expected a sync answer, got ${JSON.stringify(envelope.type)}`, httpStatus, 'error');
  return { metadata: envelope.metadata };
}

function outcomeOf(status: number): Outcome {
  return status === 404 ? 'not_found' : 'error';
}
