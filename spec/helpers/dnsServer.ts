import { createSocket } from 'node:dgram';
import { AddressInfo } from 'node:net';

/** An SRV record a spec's DNS server answers with. */
export interface SrvRecord {
  target: string;
  port: number;
  priority?: number;
  weight?: number;
}

/** A tiny DNS server on 127.0.0.1 that answers SRV questions from a table the spec controls. */
export interface SpecDnsServer {
  /** `127.0.0.1:<port>`, for a resolver's server list. */
  readonly address: string;
  /** The SRV records per name (no trailing dot); a name not in it is NXDOMAIN. Change it at will. */
  readonly records: Map<string, SrvRecord[]>;
  /** Every name asked, in order. */
  readonly asked: string[];
  close(): Promise<void>;
}

const TYPE_SRV = 33;

function encodeName(name: string): Buffer {
  const labels = name
    .replace(/\.$/, '')
    .split('.')
    .filter((l) => l !== '');
  return Buffer.concat([...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'ascii')])), Buffer.from([0])]);
}

function readName(message: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  while (message[at] !== 0) {
    const length = message[at];
    labels.push(message.subarray(at + 1, at + 1 + length).toString('ascii'));
    at += 1 + length;
  }
  return { name: labels.join('.'), end: at + 1 };
}

/**
 * Starts the server. It answers one question per query over UDP: SRV questions for a name in
 * `records` with those records (TTL 0, so nothing is cached between tests), any other question
 * with NXDOMAIN. Enough for a resolver pointed at it; nothing else is implemented.
 */
export async function startDnsServer(records: Record<string, SrvRecord[]> = {}): Promise<SpecDnsServer> {
  const table = new Map(Object.entries(records));
  const asked: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    if (query.length < 12) return;
    const { name, end } = readName(query, 12);
    const type = query.readUInt16BE(end);
    asked.push(name);
    const question = query.subarray(12, end + 4);
    const answers = type === TYPE_SRV ? (table.get(name) ?? []) : [];
    const found = table.has(name) && type === TYPE_SRV;
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0);
    header.writeUInt16BE(found ? 0x8180 : 0x8183, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const records = answers.map((r) => {
      const target = encodeName(r.target);
      const rdata = Buffer.alloc(6);
      rdata.writeUInt16BE(r.priority ?? 10, 0);
      rdata.writeUInt16BE(r.weight ?? 10, 2);
      rdata.writeUInt16BE(r.port, 4);
      const fixed = Buffer.alloc(12);
      fixed.writeUInt16BE(0xc00c, 0);
      fixed.writeUInt16BE(TYPE_SRV, 2);
      fixed.writeUInt16BE(1, 4);
      fixed.writeUInt32BE(0, 6);
      fixed.writeUInt16BE(rdata.length + target.length, 10);
      return Buffer.concat([fixed, rdata, target]);
    });
    socket.send(Buffer.concat([header, question, ...records]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    records: table,
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
