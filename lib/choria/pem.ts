/** One PEM block: its type (`RSA PRIVATE KEY`), its RFC 1421 headers, and its bytes. */
export interface PemBlock {
  type: string;
  headers: Record<string, string>;
  bytes: Buffer;
}

const BEGIN = /-----BEGIN ([^-\r\n]+)-----\r?\n/;

/**
 * The first PEM block in `text`, as Go's `pem.Decode` finds it (headers `Key: Value` before a blank
 * line, base64 body, matching END line), or `undefined` when there is none or it is malformed.
 */
export function decodePem(text: string): PemBlock | undefined {
  const begin = BEGIN.exec(text);
  if (begin === null) return undefined;
  const type = begin[1];
  const rest = text.slice(begin.index + begin[0].length);
  const endMarker = `-----END ${type}-----`;
  const end = rest.indexOf(endMarker);
  if (end < 0) return undefined;
  const lines = rest.slice(0, end).split(/\r?\n/);
  const headers: Record<string, string> = {};
  let bodyStart = 0;
  if (lines.length > 0 && lines[0].includes(':')) {
    let i = 0;
    for (; i < lines.length && lines[i].trim() !== ''; i++) {
      const colon = lines[i].indexOf(':');
      if (colon < 0) return undefined;
      headers[lines[i].slice(0, colon).trim()] = lines[i].slice(colon + 1).trim();
    }
    bodyStart = i + 1;
  }
  const body = lines.slice(bodyStart).join('').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) return undefined;
  return { type, headers, bytes: Buffer.from(body, 'base64') };
}

/** A PEM block as Go's `pem.Encode` writes it: `Proc-Type` first, other headers sorted, a blank line, 64-column base64. */
export function encodePem(block: PemBlock): string {
  const names = Object.keys(block.headers).sort((a, b) => (a === 'Proc-Type' ? -1 : b === 'Proc-Type' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  const headerText = names.length === 0 ? '' : `${names.map((name) => `${name}: ${block.headers[name]}`).join('\n')}\n\n`;
  const body = block.bytes
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '');
  return `-----BEGIN ${block.type}-----\n${headerText}${body}\n-----END ${block.type}-----\n`;
}
