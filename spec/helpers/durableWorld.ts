import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventPayload } from '../../lib/enricher/output/payload';
import { FleetConnection } from '../../streams/natsConnection';
import { freePort } from '../../streams/natsServerProcess';
import { CountingConsumer, InstanceView, bucketInstances, differences } from './durableEvents';
import { RxfleetProcess, killAll, startRxfleet } from './rxfleetProcess';
import { TestDaemon, uniqueName } from './testDaemon';
import { waitFor } from './waitFor';

interface Listed {
  name: string;
  project: string;
  status: string;
  state?: { network?: Record<string, { addresses: Array<{ family: string; scope: string; address: string }> }> | null } | null;
}

const view = (p: EventPayload): InstanceView => ({
  running: p.instance?.running ?? false,
  ipv4: (p.instance?.interfaces ?? []).flatMap((i) => i.ipv4).sort(),
});

/** What a consumer holds after applying every event it read, in order, by sequence. */
export function consumerFleet(records: CountingConsumer['records']): Map<string, InstanceView> {
  const fleet = new Map<string, InstanceView>();
  const seqs = new Map<string, number>();
  for (const { payload: p, seq } of records) {
    if (p.kind !== 'instance' || seq === undefined) continue;
    const key = `${p.project}/${p.name}`;
    if (seq <= (seqs.get(key) ?? 0)) continue;
    seqs.set(key, seq);
    if (p.old_name !== undefined) fleet.delete(`${p.project}/${p.old_name}`);
    if (p.action === 'instance-deleted') fleet.delete(key);
    else if (p.instance !== undefined) fleet.set(key, view(p));
  }
  return fleet;
}

/** One `rxfleet enrich` process of a {@link DurableWorld}. */
export interface Enricher {
  readonly process: RxfleetProcess;
  /** Its monitor port. */
  readonly port: number;
  readonly identity: string | undefined;
}

/** Options for {@link DurableWorld}. */
export interface DurableWorldOptions {
  host: TestDaemon;
  /** The NATS servers the enrichers publish to (one, or a cluster's every server). */
  natsUrls: string[];
  /** Where the consumer and the checks read the stream and the bucket. */
  admin: FleetConnection;
  dir: string;
  /** Replicas of the stream, the bucket and the election bucket the enrichers create. Default 1. */
  replicas?: number;
  /** The standby's election TTL. Default 3s. */
  ttl?: string;
}

/**
 * A real Incus or LXD daemon, `rxfleet enrich` processes publishing to a stream and a state bucket
 * (rounds every hour: the only round after a fault is the fast one a (re)connect starts), and a
 * consumer counting every event by its instance's sequence: what the durable specs and the chaos
 * suite's enricher faults run on.
 */
export class DurableWorld {
  readonly enrichers: RxfleetProcess[] = [];
  readonly consumer: CountingConsumer;
  private readonly names: string[] = [];

  constructor(private readonly options: DurableWorldOptions) {
    this.consumer = new CountingConsumer(options.admin.nc);
  }

  /** What the server says: `project/name` -> running and global IPv4 addresses. */
  async serverView(): Promise<Map<string, InstanceView>> {
    const listed = await this.options.host.query<Listed[]>('/1.0/instances?recursion=2&all-projects=true');
    return new Map(
      listed.map((i) => [
        `${i.project}/${i.name}`,
        {
          running: i.status === 'Running',
          ipv4: Object.values(i.state?.network ?? {})
            .flatMap((n) => n.addresses)
            .filter((a) => a.family === 'inet' && a.scope === 'global')
            .map((a) => a.address)
            .sort(),
        },
      ]),
    );
  }

  /** Launches `count` instances and waits for their addresses. */
  async launch(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const name = uniqueName('du');
      await this.options.host.launch(name);
      await this.options.host.waitForIPv4(name);
      this.names.push(name);
    }
  }

  /** Starts `rxfleet enrich` (one of a pair when `identity` is given); resolves once /ready is 200. */
  async startEnricher(identity?: string): Promise<Enricher> {
    const { dir, natsUrls, host, replicas = 1, ttl = '3s' } = this.options;
    const port = await freePort();
    const config = join(dir, `enrich-${port}.yaml`);
    const lines = [
      'read_delay: 100ms',
      'sweep_interval: 1h',
      'store_interval: 1s',
      'ip_timeout: 30s',
      'outputs:',
      `  jetstream: { url: "${natsUrls.join(',')}", create: true, replicas: ${replicas}, ack_timeout: 2s }`,
      `  state: { create: true, replicas: ${replicas} }`,
      ...(identity === undefined ? [] : [`standby: { identity: ${identity}, create: true, ttl: ${ttl}, replicas: ${replicas} }`]),
    ];
    writeFileSync(config, `${lines.join('\n')}\n`);
    const dataDir = join(dir, `data-${identity ?? 'single'}`);
    const process = startRxfleet([
      'enrich',
      '--config',
      config,
      '--incus',
      host.socket,
      '--monitor',
      `127.0.0.1:${port}`,
      '--data-dir',
      dataDir,
    ]);
    this.enrichers.push(process);
    await waitFor(
      async () => {
        if (!process.running()) throw new Error(`rxfleet enrich exited: ${process.stderr().slice(-800)}`);
        return (
          (await fetch(`http://127.0.0.1:${port}/ready`).then(
            (r) => r.status,
            () => 0,
          )) === 200
        );
      },
      'the enricher to be ready',
      120_000,
    );
    return { process, port, identity };
  }

  /** An enricher's role (`active`, `standby`, `starting`), or `` when it does not answer. */
  async role(enricher: Enricher): Promise<string> {
    return fetch(`http://127.0.0.1:${enricher.port}/health`)
      .then((r) => r.json() as Promise<{ role?: string }>)
      .then(
        (h) => h.role ?? '',
        () => '',
      );
  }

  /** Kills (SIGKILL) `enricher` and waits for it to be gone. */
  async kill(enricher: Enricher): Promise<void> {
    enricher.process.child.kill('SIGKILL');
    await enricher.process.exited;
  }

  /** A few changes: one instance launched, the first stopped (or started again), and past three one deleted. */
  async change(): Promise<void> {
    const { host } = this.options;
    const name = uniqueName('du');
    await host.launch(name);
    this.names.push(name);
    const [first] = this.names;
    if ((await this.serverView()).get(`default/${first}`)?.running === true) await host.stopInstance(first);
    else await host.cli('start', first);
    if (this.names.length > 3) await host.deleteInstance(this.names.splice(1, 1)[0]);
  }

  /**
   * What differs from the server's view: the bucket's, and (once caught up) the consumer's. A
   * bucket that cannot be read for a moment (the server restarting) is a difference, not a failure.
   */
  async differences(): Promise<string[]> {
    const truth = await this.serverView();
    const bucket = await bucketInstances(this.options.admin.nc).catch((error: Error) => error);
    if (bucket instanceof Error) return [`the bucket cannot be read yet: ${bucket.message}`];
    const caughtUp = await this.consumer.caughtUp();
    return [
      ...differences(truth, bucket).map((d) => `bucket ${d}`),
      ...(caughtUp ? differences(truth, consumerFleet(this.consumer.records)).map((d) => `consumer ${d}`) : ['consumer behind']),
    ];
  }

  /** Seconds until the bucket and the consumer agree with the server, or the differences after `timeoutMs`. */
  async converge(timeoutMs: number): Promise<{ seconds: number } | { differences: string[] }> {
    const from = Date.now();
    let last: string[] = [];
    while (Date.now() - from < timeoutMs) {
      last = await this.differences();
      if (last.length === 0) return { seconds: Math.round((Date.now() - from) / 100) / 10 };
      await new Promise((r) => setTimeout(r, 200));
    }
    return { differences: last };
  }

  /** The warnings and errors the enrichers logged, the last `count`. */
  said(count = 20): string[] {
    return this.enrichers
      .flatMap((e) => e.lines.filter((l) => Number(l.level) >= 40).map((l) => `${String(l.msg)} ${JSON.stringify(l.err ?? '')}`))
      .slice(-count);
  }

  /** Kills every enricher and stops the consumer. */
  async stop(): Promise<void> {
    this.consumer.stop();
    await killAll(this.enrichers);
  }
}
