import { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { IncusEndpoint } from './incusEndpoint';
import { inputCollector } from '../inputCollector';

/** What one events websocket tells its owner. */
export interface EventSocketHandlers {
  /** The websocket handshake completed. */
  open(): void;
  /** One message, as text. */
  frame(text: string): void;
  /** A ping or a pong arrived: the peer is alive. */
  alive(): void;
  /** The socket ended, or never opened, and why. Called at most once, and never after `terminate`. */
  closed(reason: string): void;
}

/** The owner's handle on one events websocket. */
export interface EventSocket {
  /** Sends a ping if the socket is open; the pong comes back as `alive`. */
  ping(): void;
  /** Ends the socket at once, without a closing handshake, and without calling `closed`. */
  terminate(): void;
}

/** Opens one events websocket. `incusEvents` opens one per session; specs pass a fake. */
export type EventSocketOpener = (handlers: EventSocketHandlers) => EventSocket;

/** Options for {@link wsEventSocket}. */
export interface WsEventSocketOptions {
  /** Path and query of the events endpoint. */
  path: string;
  /** A longer message ends the session (the server never sends one). Default 1 MiB. */
  maxFrameBytes?: number;
}

const ERROR_BODY_BYTES = 4096;

/**
 * Opens events websockets to `endpoint` with `ws`, through the endpoint's own connections (the unix
 * socket, or TLS with the pinned certificate), so the websocket and the REST calls share one idea
 * of the server. The URL scheme is `ws:` in both cases because the connection is already TLS when
 * the endpoint is https: `ws` then only speaks HTTP over it.
 *
 * A refused upgrade (`HTTP 500 "bogus" isn't a supported event type`) ends the attempt with the
 * server's error text as the reason. Frames are handed on as UTF-8 text.
 */
export function wsEventSocket(endpoint: IncusEndpoint, options: WsEventSocketOptions): EventSocketOpener {
  const { path, maxFrameBytes = 1024 * 1024 } = options;
  return (handlers) => {
    let done = false;
    const finish = (reason: string): void => {
      if (done) return;
      done = true;
      handlers.closed(reason);
    };
    const ws = new WebSocket(`ws://${endpoint.host}${path}`, {
      createConnection: endpoint.createConnection as never,
      perMessageDeflate: false,
      maxPayload: maxFrameBytes,
    });
    ws.on('open', () => {
      if (!done) handlers.open();
    });
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      if (done) return;
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      inputCollector.received(buffer.byteLength);
      handlers.frame(buffer.toString('utf8'));
    });
    ws.on('ping', () => {
      if (!done) handlers.alive();
    });
    ws.on('pong', () => {
      if (!done) handlers.alive();
    });
    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < ERROR_BODY_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('error', () => undefined);
      res.on('end', () => {
        finish(`upgrade refused: ${errorText(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8').slice(0, ERROR_BODY_BYTES))}`);
        ws.terminate();
      });
    });
    ws.on('error', (error) => finish(error.message));
    ws.on('close', (code, reason) => finish(`closed (${code}${reason.length > 0 ? ` ${reason.toString('utf8')}` : ''})`));
    return {
      ping() {
        if (ws.readyState === WebSocket.OPEN) ws.ping();
      },
      terminate() {
        done = true;
        ws.terminate();
      },
    };
  };
}

function errorText(status: number, body: string): string {
  try {
    const envelope = JSON.parse(body) as { error?: unknown };
    if (typeof envelope.error === 'string' && envelope.error !== '') return `HTTP ${status} ${envelope.error}`;
  } catch {
    // not an envelope: the status says enough
  }
  return `HTTP ${status}`;
}
