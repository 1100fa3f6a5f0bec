import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { EventPayload } from '../../../lib/enricher/output/payload';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { NatsServerProcess, freePort, startNatsServer } from '../../../streams/natsServerProcess';
import { TestDaemon, daemonSpecsUnavailable, startTestDaemon, uniqueName } from '../../../spec/helpers/testDaemon';
import { sampleValue } from '../../../spec/helpers/provisioner';
import { RxfleetProcess } from '../../../spec/helpers/rxfleetProcess';
import { waitFor } from '../../../spec/helpers/waitFor';
import { now, onCleanUp, peakRssMiB, rxfleet, sleep, stopProcess } from './processes';

/** What a consumer knows of one instance from the events it received. */
interface Seen {
  running: boolean;
  ipv4: string[];
}

/**
 * A private LXD daemon with a few running instances, a private nats-server, `rxfleet enrich` as a
 * process publishing to it, and a consumer that keeps the state the published events describe,
 * to compare with LXD's own.
 */
export interface EnrichRig {
  readonly lxd: TestDaemon;
  readonly nats: NatsServerProcess;
  readonly dir: string;
  daemon(): RxfleetProcess;
  /** Starts `rxfleet enrich` with these extra configuration lines, and waits for /ready. */
  startDaemon(yaml?: string[], dataDir?: string): Promise<void>;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** Differences between what the events say and what LXD says (empty when they agree). */
  differences(): Promise<string[]>;
  /** Seconds until the published state agrees with LXD's, or undefined after `timeoutMs`. */
  converge(timeoutMs: number): Promise<number | undefined>;
  /** Launches an instance and waits for its address. */
  launch(): Promise<string>;
  peakRss(): number | undefined;
  /** Events received. */
  received(): number;
  /** Stops the enricher, the consumer, nats-server and LXD, and removes every file. */
  stop(): Promise<void>;
}

/** Why the chaos rig's private LXD daemon cannot start here, or `undefined`. */
export const lxdUnavailable = (): string | undefined => daemonSpecsUnavailable('lxd');

export async function startEnrichRig(instances: number): Promise<EnrichRig> {
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-chaos-enrich-'));
  const lxd = await startTestDaemon('lxd');
  const nats = await startNatsServer({ jetstream: true });
  const removeCleanUp = onCleanUp(async () => {
    await nats.stop();
    await lxd.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  const names: string[] = [];
  const launch = async (): Promise<string> => {
    const name = uniqueName('ch');
    await lxd.launch(name);
    await lxd.waitForIPv4(name);
    names.push(name);
    return name;
  };
  for (let i = 0; i < instances; i++) await launch();

  // The consumer: the state the events describe, read in order from a stream on the subjects (file
  // storage, so it survives the broker's restart). A core subscription would race the enricher's
  // reconnection after an outage and miss what was sent before its own: a consumer that must not
  // miss an event uses JetStream, as docs/enricher/getting-started.md says.
  const seen = new Map<string, Seen>();
  let events = 0;
  const consumer: FleetConnection = await openNatsConnection({ servers: [nats.url], name: 'chaos-consumer' });
  const jsm = await jetstreamManager(consumer.nc);
  await jsm.streams.add({ name: 'CHAOS_EVENTS', subjects: ['incus.events.>'] });
  let read = 0;
  const apply = (payload: EventPayload): void => {
    events++;
    if (payload.kind !== 'instance') return;
    const key = `${payload.project}/${payload.name}`;
    if (payload.old_name !== undefined) seen.delete(`${payload.project}/${payload.old_name}`);
    if (payload.action === 'instance-deleted') seen.delete(key);
    else if (payload.instance !== undefined)
      seen.set(key, { running: payload.instance.running, ipv4: payload.instance.interfaces.flatMap((i) => i.ipv4).sort() });
  };
  /** Applies what the stream holds beyond what was read; a request while reconnecting waits for the next call. */
  const catchUp = async (): Promise<void> => {
    const last = (await jsm.streams.info('CHAOS_EVENTS')).state.last_seq;
    for (; read < last; read++) {
      const message = await jsm.streams.getMessage('CHAOS_EVENTS', { seq: read + 1 });
      if (message !== null) apply(message.json<EventPayload>());
    }
  };

  let daemon: RxfleetProcess | undefined;
  let port = 0;
  const differences = async (): Promise<string[]> => {
    if (
      !(await catchUp().then(
        () => true,
        () => false,
      ))
    )
      return ['the consumer is reconnecting'];
    type Listed = {
      name: string;
      project: string;
      status: string;
      state?: { network?: Record<string, { addresses: { family: string; scope: string; address: string }[] }> };
    };
    const listed = await lxd.query<Listed[]>('/1.0/instances?recursion=2&all-projects=true');
    const truth = new Map<string, Seen>();
    for (const i of listed) {
      const ipv4 = Object.values(i.state?.network ?? {})
        .flatMap((n) => n.addresses.filter((a) => a.family === 'inet' && a.scope === 'global').map((a) => a.address))
        .sort();
      truth.set(`${i.project}/${i.name}`, { running: i.status === 'Running', ipv4 });
    }
    const out: string[] = [];
    for (const [key, t] of truth) {
      const s = seen.get(key);
      if (s === undefined) out.push(`${key}: never published`);
      else if (s.running !== t.running || s.ipv4.join() !== t.ipv4.join())
        out.push(`${key}: published ${JSON.stringify(s)}, LXD ${JSON.stringify(t)}`);
    }
    for (const key of seen.keys()) if (!truth.has(key)) out.push(`${key}: published, gone from LXD`);
    return out;
  };
  return {
    lxd,
    nats,
    dir,
    daemon: () => daemon as RxfleetProcess,
    async startDaemon(yaml = [], dataDir = join(dir, 'data')) {
      port = await freePort();
      const config = join(dir, `enrich-${port}.yaml`);
      writeFileSync(config, ['read_delay: 200ms', 'sweep_interval: 3s', 'store_interval: 1s', ...yaml].join('\n'));
      const started = rxfleet([
        'enrich',
        '--config',
        config,
        '--incus',
        lxd.socket,
        '--nats',
        nats.url,
        '--monitor',
        `127.0.0.1:${port}`,
        '--data-dir',
        dataDir,
      ]);
      daemon = started;
      await waitFor(
        async () => {
          if (!started.running()) throw new Error(`rxfleet enrich exited: ${started.stderr().slice(-500)}`);
          return (
            (await fetch(`http://127.0.0.1:${port}/ready`).then(
              (r) => r.status,
              () => 0,
            )) === 200
          );
        },
        'the enricher to be ready',
        60_000,
      );
    },
    metric: async (name, labels = {}) =>
      sampleValue(
        await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (r) => r.text(),
          () => '',
        ),
        name,
        labels,
      ),
    differences,
    async converge(timeoutMs) {
      const from = now();
      while (now() - from < timeoutMs) {
        if ((await differences().catch(() => ['LXD does not answer'])).length === 0) return Math.round((now() - from) / 100) / 10;
        await sleep(500);
      }
      return undefined;
    },
    launch,
    peakRss: () => peakRssMiB(daemon?.child.pid),
    received: () => events,
    async stop() {
      if (daemon !== undefined) await stopProcess(daemon, 30_000);
      await consumer.drain().catch(() => undefined);
      removeCleanUp();
      await nats.stop();
      await lxd.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
