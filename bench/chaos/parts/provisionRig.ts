import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerProcess, freePort, startNatsServer } from '../../../streams/natsServerProcess';
import { sampleValue } from '../../../spec/helpers/provisioner';
import { RxfleetProcess } from '../../../spec/helpers/rxfleetProcess';
import { waitFor } from '../../../spec/helpers/waitFor';
import { now, onCleanUp, peakRssMiB, rxfleet, sleep, stopProcess } from './processes';

export const SH_HELPER = join(__dirname, '../../helpers/sh-helper.sh');
const TOKEN = 'chaos-token';

/** One progress report of the fleet, stamped when it arrived. */
export interface FleetProgress {
  at: number;
  configured: number;
  provisioned: number;
  duplicates: number;
}

/** Options for {@link startProvisionRig}. */
export interface ProvisionRigOptions {
  nodes: number;
  /** The helper command. Default the POSIX sh sample helper (fast: the figure is the provisioner's). */
  helper?: string;
  workers?: number;
  /** More YAML lines for the provisioner. */
  yaml?: string[];
  /** More `rxfleet simulate` flags. */
  fleetArgs?: string[];
}

/**
 * A private nats-server, a fleet from `rxfleet simulate` (its progress sampled every 200 ms) and
 * `rxfleet provision` as processes, as a site runs them; the fleet's own count is the truth.
 */
export interface ProvisionRig {
  readonly server: NatsServerProcess;
  readonly fleet: RxfleetProcess;
  readonly progress: FleetProgress[];
  daemon(): RxfleetProcess;
  /** Starts a provisioner (another one after a kill), waiting until it is ready. */
  startDaemon(): Promise<RxfleetProcess>;
  /** One sample from the current daemon's /metrics (NaN when it does not answer). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** The last progress report. */
  latest(): FleetProgress;
  /** Waits until the fleet says `configured` reached `count`. */
  waitConfigured(count: number, timeoutMs: number): Promise<void>;
  /** Waits (bounded) until every node is provisioned by the fleet's count; false on timeout. */
  waitAllProvisioned(timeoutMs: number): Promise<boolean>;
  /**
   * When the fleet's progress line first said `count` nodes provisioned (`now()` as the line
   * arrived, so as fine as the fleet's `--report-every`); undefined after `timeoutMs`.
   */
  provisionedAt(count: number, timeoutMs: number): Promise<number | undefined>;
  /** The daemon's peak RSS now, MiB. */
  peakRss(): number | undefined;
  /** Stops everything; the fleet's summary. */
  finish(): Promise<Record<string, unknown>>;
}

export async function startProvisionRig(options: ProvisionRigOptions): Promise<ProvisionRig> {
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-chaos-'));
  const server = await startNatsServer({ jetstream: false });
  const removeCleanUp = onCleanUp(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const fleet = rxfleet([
    'simulate',
    '--nats',
    server.url,
    '--nodes',
    String(options.nodes),
    '--token',
    TOKEN,
    '--json',
    '--report-every',
    '200ms',
    '--log-level',
    'error',
    ...(options.fleetArgs ?? []),
  ]);
  await fleet.next((l) => l.type === 'ready');
  const progress: FleetProgress[] = [];
  let seen = 0;
  const sampler = setInterval(() => {
    for (; seen < fleet.lines.length; seen++) {
      const line = fleet.lines[seen];
      if (line.type === 'progress')
        progress.push({
          at: now(),
          configured: Number(line.configured),
          provisioned: Number(line.provisioned),
          duplicates: Number(line.duplicates),
        });
    }
  }, 50);

  const choria = join(dir, 'choria.cfg');
  writeFileSync(choria, `identity = chaos-provisioner.example.net\nplugin.choria.middleware_hosts = ${server.url}\n`);
  let daemon: RxfleetProcess | undefined;
  let port = 0;
  const startDaemon = async (): Promise<RxfleetProcess> => {
    port = await freePort();
    const config = join(dir, `provision-${port}.yaml`);
    writeFileSync(
      config,
      [
        `helper: ${options.helper ?? SH_HELPER}`,
        `token: ${TOKEN}`,
        'choria_insecure: true',
        `workers: ${options.workers ?? 16}`,
        `monitor_port: ${port}`,
        'loglevel: warn',
        'interval: 1m',
        ...(options.yaml ?? []),
      ].join('\n'),
    );
    const started = rxfleet(['provision', '--config', config, '--choria-config', choria]);
    daemon = started;
    await waitFor(
      async () => {
        if (!started.running()) throw new Error(`the provisioner exited: ${started.stderr().slice(-500)}`);
        return (
          (await fetch(`http://127.0.0.1:${port}/ready`).then(
            (r) => r.status,
            () => 0,
          )) === 200
        );
      },
      'the provisioner to be ready',
      60_000,
    );
    return started;
  };
  const latest = (): FleetProgress => progress.at(-1) ?? { at: now(), configured: 0, provisioned: 0, duplicates: 0 };
  return {
    server,
    fleet,
    progress,
    daemon: () => {
      if (daemon === undefined) throw new Error('no provisioner started');
      return daemon;
    },
    startDaemon,
    metric: async (name, labels = {}) =>
      sampleValue(
        await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (r) => r.text(),
          () => '',
        ),
        name,
        labels,
      ),
    latest,
    waitConfigured: (count, timeoutMs) => waitFor(() => latest().configured >= count, `${count} nodes configured`, timeoutMs),
    waitAllProvisioned: async (timeoutMs) => {
      const deadline = now() + timeoutMs;
      while (now() < deadline) {
        if (latest().provisioned >= options.nodes) return true;
        await sleep(100);
      }
      return false;
    },
    provisionedAt: async (count, timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
      // The fleet ending first (it was stopped) is an answer too: it never got there.
      const reached = fleet
        .next((l) => l.type === 'progress' && Number(l.provisioned) >= count)
        .then(
          () => now(),
          () => undefined,
        );
      try {
        return await Promise.race([reached, timedOut]);
      } finally {
        clearTimeout(timer);
      }
    },
    peakRss: () => peakRssMiB(daemon?.child.pid),
    async finish() {
      clearInterval(sampler);
      if (daemon !== undefined) await stopProcess(daemon, 10_000);
      await stopProcess(fleet, 10_000);
      const summary = await fleet.next((l) => l.type === 'summary').catch(() => ({}) as Record<string, unknown>);
      removeCleanUp();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
      return summary;
    },
  };
}

/** Nodes configured per second over [from, to), from the fleet's progress. */
export function rateBetween(progress: FleetProgress[], from: number, to: number): number {
  const before = [...progress].reverse().find((p) => p.at <= from) ?? progress[0];
  const after = [...progress].reverse().find((p) => p.at <= to) ?? before;
  if (before === undefined || after === undefined || after.at <= before.at) return 0;
  return (after.configured - before.configured) / ((after.at - before.at) / 1000);
}

/**
 * Seconds after `since` until the configure rate over one second first reached `fraction` of
 * `rate` again, or until the last node was configured (a fleet that finishes within the window
 * has recovered); undefined if neither happened.
 */
export function secondsToRate(progress: FleetProgress[], since: number, rate: number, total: number, fraction = 0.8): number | undefined {
  for (const p of progress) {
    if (p.at < since + 1000) continue;
    if (p.configured >= total || rateBetween(progress, p.at - 1000, p.at) >= fraction * rate) return Math.round((p.at - since) / 100) / 10;
  }
  return undefined;
}
