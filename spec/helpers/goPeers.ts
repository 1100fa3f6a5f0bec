import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

/** `NAME=value` lines of scripts/go-peers.conf: the peers' modules and pinned versions. */
function peersConf(): Record<string, string> {
  const conf: Record<string, string> = {};
  for (const line of readFileSync(join(ROOT, 'scripts/go-peers.conf'), 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(\S*)$/.exec(line.trim());
    if (m !== null) conf[m[1]!] = m[2]!;
  }
  return conf;
}

const conf = peersConf();
const peersDir = process.env.RXFLEET_PEERS_DIR ?? join(ROOT, '.cache/peers');

function installed(name: string, version: string, file: string): string {
  const path = join(peersDir, `${name}-${version}`, file);
  if (!existsSync(path)) {
    throw new Error(`${path} is not installed: run scripts/go-peers.sh (npm test runs it first, through scripts/test-prerequisites.sh)`);
  }
  return path;
}

/** go-choria's version the specs run (scripts/go-peers.conf), without the `v`. */
export const CHORIA_VERSION = conf.CHORIA_VERSION!.replace(/^v/, '');

/** The current nats-server's version (scripts/go-peers.conf), without the `v`. */
export const CURRENT_NATS_SERVER_VERSION = conf.NATS_SERVER_VERSION!.replace(/^v/, '');

/**
 * The `choria` binary (broker, server, client, jwt tools) scripts/go-peers.sh built, with the
 * provisioning JWT's path compiled in as {@link CHORIA_PROVISIONING_JWT}.
 */
export function choriaBinary(): string {
  return installed('choria', conf.CHORIA_VERSION!, 'choria');
}

/** The file name a provisioning-mode server reads its provisioning JWT from, in its working directory. */
export const CHORIA_PROVISIONING_JWT = conf.CHORIA_PROVISIONING_JWT!;

/** The current nats-server scripts/go-peers.sh installed (Debian's 2.9.10 is `nats-server` on PATH). */
export function currentNatsServerBinary(): string {
  return installed('nats-server', conf.NATS_SERVER_VERSION!, 'nats-server');
}
