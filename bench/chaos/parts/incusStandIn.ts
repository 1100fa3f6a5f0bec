import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { IncusApiError, IncusReader } from '../../../lib/incus/api';

/**
 * An Incus server on a unix socket, as `rxfleet enrich --incus SOCKET` meets one: the REST reads
 * the enricher makes (`/1.0/projects`, `/1.0/networks`, `/1.0/instances`, each instance and its
 * state) answered in the server's envelope from a reader (the benches' `FakeIncus`), and the events
 * websocket (`/1.0/events`) carrying whatever frames the scenario sends: real lifecycle events in
 * the server's own shape ({@link lifecycleFrame}), and junk.
 */
export interface IncusStandIn {
  readonly socket: string;
  /** Resolves once an events websocket is open. */
  listening(): Promise<void>;
  /** Sends one frame on every open events websocket. */
  send(frame: string | Uint8Array): void;
  /** Resolves once every frame sent so far has left for the socket. */
  drained(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One lifecycle event exactly as Incus 6 writes it on the events websocket (`api.Event` around
 * `api.EventLifecycle`, newline-terminated), for an instance in the default project.
 */
export function lifecycleFrame(action: string, name: string, timestamp = new Date().toISOString()): string {
  return `${JSON.stringify({
    type: 'lifecycle',
    timestamp,
    metadata: {
      action,
      source: `/1.0/instances/${encodeURIComponent(name)}`,
      requestor: { username: 'root', protocol: 'unix', address: '@' },
      name,
      project: 'default',
    },
    location: 'none',
    project: 'default',
  })}\n`;
}

function answer(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** The REST call a path names, with its project. */
async function read(reader: IncusReader, url: URL): Promise<unknown> {
  const project = url.searchParams.get('project') ?? 'default';
  const parts = url.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const [version, kind, name, sub] = parts;
  if (version !== '1.0') throw new IncusApiError('not found', 404);
  if (kind === 'projects' && name === undefined) return (await reader.listProjectNames()).map((p) => `/1.0/projects/${p}`);
  if (kind === 'projects' && name !== undefined) return reader.getProject(name);
  if (kind === 'networks' && name === undefined) return (await reader.listNetworkNames(project)).map((n) => `/1.0/networks/${n}`);
  if (kind === 'networks' && name !== undefined) return reader.getNetwork(project, name);
  if (kind === 'instances' && name === undefined) return (await reader.listInstanceNames(project)).map((n) => `/1.0/instances/${n}`);
  if (kind === 'instances' && name !== undefined && sub === undefined) return reader.getInstance(project, name);
  if (kind === 'instances' && name !== undefined && sub === 'state') return reader.getInstanceState(project, name);
  throw new IncusApiError('not found', 404);
}

export async function startIncusStandIn(reader: IncusReader, socket: string): Promise<IncusStandIn> {
  const sockets = new Set<WebSocket>();
  let opened: (() => void) | undefined;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://incus');
    read(reader, url).then(
      (metadata) =>
        answer(res, 200, { type: 'sync', status: 'Success', status_code: 200, operation: '', error_code: 0, error: '', metadata }),
      (error: unknown) => {
        const status = error instanceof IncusApiError && error.status > 0 ? error.status : 500;
        answer(res, status, {
          type: 'error',
          status: '',
          status_code: 0,
          operation: '',
          error_code: status,
          error: String((error as Error).message),
          metadata: null,
        });
      },
    );
  });
  const events = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  server.on('upgrade', (req: IncomingMessage, stream: Duplex, head: Buffer) => {
    if (!(req.url ?? '').startsWith('/1.0/events')) {
      stream.destroy();
      return;
    }
    events.handleUpgrade(req, stream, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.on('error', () => sockets.delete(ws));
      opened?.();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  return {
    socket,
    listening: () => (sockets.size > 0 ? Promise.resolve() : new Promise<void>((resolve) => (opened = resolve))),
    send(frame) {
      for (const ws of sockets) ws.send(frame);
    },
    async drained() {
      while ([...sockets].some((ws) => ws.bufferedAmount > 0)) await new Promise((r) => setTimeout(r, 5));
    },
    async stop() {
      for (const ws of sockets) ws.terminate();
      events.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
