import { mkdtempSync, rmSync } from 'node:fs';
import { IncomingMessage, Server, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { EventSocket, EventSocketHandlers, wsEventSocket } from '../../../streams/incus/eventSocket';
import { incusEndpoint } from '../../../streams/incus/incusEndpoint';

// The ws adapter against a small websocket server on a unix socket, for what LXD will not do on
// cue: binary and oversized frames, a refusal without an error envelope. What LXD does is specced in
// incusEvents.lxd.spec.ts.

type Heard = { kind: 'open' } | { kind: 'frame'; text: string } | { kind: 'alive' } | { kind: 'closed'; reason: string };

function listenTo(
  socketPath: string,
  path = '/1.0/events?type=lifecycle',
): { heard: Heard[]; socket: EventSocket; until: (kind: Heard['kind']) => Promise<Heard> } {
  const heard: Heard[] = [];
  const waiters: Array<() => void> = [];
  const push = (item: Heard): void => {
    heard.push(item);
    waiters.splice(0).forEach((w) => w());
  };
  const handlers: EventSocketHandlers = {
    open: () => push({ kind: 'open' }),
    frame: (text) => push({ kind: 'frame', text }),
    alive: () => push({ kind: 'alive' }),
    closed: (reason) => push({ kind: 'closed', reason }),
  };
  const socket = wsEventSocket(incusEndpoint({ url: socketPath }), { path, maxFrameBytes: 1024 })(handlers);
  const until = async (kind: Heard['kind']): Promise<Heard> => {
    for (;;) {
      const found = heard.find((h) => h.kind === kind);
      if (found !== undefined) return found;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return { heard, socket, until };
}

describe('wsEventSocket', () => {
  let dir: string;
  let socketPath: string;
  let server: Server;
  let wss: WebSocketServer;
  let onConnection: (ws: WebSocket, req: IncomingMessage) => void;
  let refuse: ((req: IncomingMessage) => { status: number; body: string }) | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-incus-ws-'));
    socketPath = join(dir, 'unix.socket');
    server = createServer();
    wss = new WebSocketServer({ noServer: true });
    server.on('upgrade', (req, socket, head) => {
      const refusal = refuse?.(req);
      if (refusal !== undefined) {
        socket.end(
          `HTTP/1.1 ${refusal.status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(refusal.body)}\r\nConnection: close\r\n\r\n${refusal.body}`,
        );
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req));
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
  });

  afterAll(async () => {
    for (const client of wss.clients) client.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    refuse = undefined;
  });

  it('opens on the given path, hands text and binary frames on as text, and pings and pongs as life', async () => {
    let seenPath = '';
    onConnection = (ws, req) => {
      seenPath = req.url ?? '';
      ws.send('{"type":"lifecycle"}\n');
      ws.send(Buffer.from('binary but text'), { binary: true });
      ws.ping();
      ws.on('ping', () => ws.close(1000, 'bye'));
    };
    const client = listenTo(socketPath, '/1.0/events?type=lifecycle&all-projects=true');
    await client.until('open');
    client.socket.ping();
    const closed = await client.until('closed');
    expect(seenPath).toBe('/1.0/events?type=lifecycle&all-projects=true');
    expect(client.heard.filter((h) => h.kind === 'frame')).toEqual([
      { kind: 'frame', text: '{"type":"lifecycle"}\n' },
      { kind: 'frame', text: 'binary but text' },
    ]);
    expect(client.heard.some((h) => h.kind === 'alive')).toBe(true);
    expect(closed).toEqual({ kind: 'closed', reason: 'closed (1000 bye)' });
    expect(client.heard.filter((h) => h.kind === 'closed')).toHaveLength(1);
  });

  it('ends the session on a frame longer than the limit', async () => {
    onConnection = (ws) => ws.send('x'.repeat(2048));
    const client = listenTo(socketPath);
    const closed = await client.until('closed');
    expect(closed.kind === 'closed' && closed.reason).toMatch(/Max payload size exceeded/);
    expect(client.heard.some((h) => h.kind === 'frame')).toBe(false);
  });

  it("reports a refused upgrade with the server's error text, or its status alone", async () => {
    refuse = () => ({
      status: 500,
      body: JSON.stringify({ type: 'error', error: '"bogus" isn\'t a supported event type', error_code: 500 }),
    });
    const bogus = listenTo(socketPath, '/1.0/events?type=bogus');
    expect(await bogus.until('closed')).toEqual({
      kind: 'closed',
      reason: 'upgrade refused: HTTP 500 "bogus" isn\'t a supported event type',
    });

    refuse = () => ({ status: 403, body: 'forbidden' });
    const forbidden = listenTo(socketPath);
    expect(await forbidden.until('closed')).toEqual({ kind: 'closed', reason: 'upgrade refused: HTTP 403' });
    expect([...bogus.heard, ...forbidden.heard].filter((h) => h.kind === 'open')).toEqual([]);
  });

  it('reports a socket that is not there', async () => {
    const client = listenTo(join(dir, 'nothing.socket'));
    const closed = await client.until('closed');
    expect(closed.kind === 'closed' && closed.reason).toMatch(/ENOENT/);
  });

  it('says nothing more once terminated, and the server sees the connection go', async () => {
    const serverSide = new Promise<WebSocket>((r) => (onConnection = (ws) => r(ws)));
    const client = listenTo(socketPath);
    await client.until('open');
    const ws = await serverSide;
    const gone = new Promise<void>((r) => ws.on('close', () => r()));
    client.socket.terminate();
    await gone;
    expect(client.heard).toEqual([{ kind: 'open' }]);
  });
});
