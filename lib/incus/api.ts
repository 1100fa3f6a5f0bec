/**
 * What rxfleet reads from an Incus or LXD server, and the one interface it reads through.
 *
 * The shapes are the subset of the REST API (`/1.0/...`) the enricher uses; both LXD 5.0 and
 * Incus answer them. Fields the daemon may omit are optional. The reader is promise-based with an
 * `AbortSignal` so that `fromAbortable` turns each call into an Observable factory, and a fake
 * reader in specs needs no HTTP at all.
 */

/** `GET /1.0/instances/<name>?project=<p>` (metadata). */
export interface IncusInstance {
  name: string;
  project: string;
  /** `container` or `virtual-machine`. */
  type: string;
  /** `Running`, `Stopped`, ... */
  status: string;
  /** 103 is Running. */
  status_code: number;
  config: Record<string, string>;
  expanded_config?: Record<string, string>;
  devices: Record<string, Record<string, string>>;
  expanded_devices?: Record<string, Record<string, string>>;
  profiles?: string[];
  location?: string;
}

/** One address of an instance interface, as `/state` reports it. */
export interface IncusAddress {
  /** `inet` or `inet6`. */
  family: string;
  address: string;
  netmask: string;
  /** `global`, `link`, `local`. */
  scope: string;
}

/** One interface inside the instance, keyed by its guest name in `IncusInstanceState.network`. */
export interface IncusInterfaceState {
  addresses: IncusAddress[];
  hwaddr?: string;
  host_name?: string;
  /** `broadcast`, `loopback`, ... */
  type?: string;
  state?: string;
}

/** `GET /1.0/instances/<name>/state?project=<p>` (metadata). */
export interface IncusInstanceState {
  status: string;
  status_code: number;
  /** Absent or null while stopped. */
  network?: Record<string, IncusInterfaceState> | null;
  processes?: number;
  pid?: number;
}

/** `GET /1.0/networks/<name>?project=<p>` (metadata). */
export interface IncusNetwork {
  name: string;
  /** `bridge`, `ovn`, `physical`, ... */
  type: string;
  managed: boolean;
  config: Record<string, string>;
  used_by?: string[] | null;
  /** Newer servers say which project owns the network; LXD 5.0 does not. */
  project?: string;
}

/** `GET /1.0/projects/<name>` (metadata). */
export interface IncusProject {
  name: string;
  config: Record<string, string>;
  used_by?: string[] | null;
}

/** An error answer from the server (`{"type":"error","error_code":404,...}`) or a transport failure. */
export class IncusApiError extends Error {
  constructor(
    message: string,
    /** The HTTP status (`error_code`); 0 when the request never got an answer. */
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'IncusApiError';
  }

  /** The thing asked about does not exist (any more). */
  get notFound(): boolean {
    return this.status === 404;
  }

  /**
   * The client may not ask this: LXD answers 403 (`not authorized`), Incus 6.0 answers a listing
   * in a project a restricted certificate may not see with 500 (`User does not have permissions
   * for project "default"`).
   */
  get forbidden(): boolean {
    return this.status === 403 || (this.status === 500 && /does not have permissions? for project/i.test(this.message));
  }
}

/**
 * Everything the enricher reads, one call per REST request. Every call rejects with an
 * {@link IncusApiError} on an error answer and aborts when `signal` does.
 */
export interface IncusReader {
  getInstance(project: string, name: string, signal?: AbortSignal): Promise<IncusInstance>;
  getInstanceState(project: string, name: string, signal?: AbortSignal): Promise<IncusInstanceState>;
  getNetwork(project: string, name: string, signal?: AbortSignal): Promise<IncusNetwork>;
  getProject(name: string, signal?: AbortSignal): Promise<IncusProject>;
  /** Names from `GET /1.0/projects` (the URL list, not recursion). */
  listProjectNames(signal?: AbortSignal): Promise<string[]>;
  /** Names from `GET /1.0/networks?project=<p>`; includes unmanaged host NICs. */
  listNetworkNames(project: string, signal?: AbortSignal): Promise<string[]>;
  /** Names from `GET /1.0/instances?project=<p>`. */
  listInstanceNames(project: string, signal?: AbortSignal): Promise<string[]>;
}

/**
 * One lifecycle event, decoded from either shape (DECISIONS E9): LXD 5.0 puts the project only on
 * the envelope and no `name` in the metadata; newer Incus also fills `metadata.project` and
 * `metadata.name`.
 */
export interface IncusLifecycleEvent {
  /** `instance-started`, `network-updated`, `profile-updated`, ... */
  action: string;
  project: string;
  /** The subject's name: `metadata.name`, else the last path segment of `source`. */
  name: string;
  /** On renames, `context.old_name`. */
  oldName?: string;
  /** The resource URL, e.g. `/1.0/instances/c1?project=p2`. */
  source: string;
  /** As the server sent it (RFC 3339, variable fraction digits). */
  timestamp: string;
  /** Cluster member, `none` on a standalone server. */
  location?: string;
}

/** What the event listener hands on: events, and the session's own comings and goings. */
export type IncusStreamItem =
  | { kind: 'connected' }
  | { kind: 'disconnected'; reason: string }
  | { kind: 'event'; event: IncusLifecycleEvent }
  /** A frame that could not be decoded: counted and logged once by the listener, never thrown. */
  | { kind: 'malformed'; reason: string };
