import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { currentNatsServerBinary } from './goPeers';

/**
 * Jest global setup: one scratch directory for the whole run, for what is costly to make and the
 * same for every suite (the LXD test image). Suites find it in `RXFLEET_RUN_DIR`; the global
 * teardown removes it.
 *
 * And the nats-server the specs run: a current one (scripts/go-peers.conf, the line the Choria
 * Broker embeds) first on PATH, for every suite and every process a suite starts (`rxfleet demo`,
 * `rxfleet simulate` without `--nats`). The specs that must also hold on Debian's 2.9.10 name it
 * (`NATS_SERVERS` in spec/helpers/natsServers.ts).
 */
export default function runDirSetup(): void {
  process.env.RXFLEET_RUN_DIR = mkdtempSync(join(tmpdir(), 'rxfleet-run-'));
  process.env.PATH = `${dirname(currentNatsServerBinary())}${delimiter}${process.env.PATH ?? ''}`;
}
