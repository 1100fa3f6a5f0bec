import { Registry } from 'prom-client';
import { Observable, Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { IncusStreamItem } from '../../../lib/incus/api';
import { FakeIncus } from '../../helpers/FakeIncus';
import { memoryColdStore } from '../../helpers/memoryColdStore';
import { ColdStoreDocument, snapshotModel } from '../../../lib/enricher/coldStore/coldStoreDocument';
import { distillInstance, isIncomplete } from '../../../lib/enricher/model/distillInstance';
import { FleetModel } from '../../../lib/enricher/model/FleetModel';
import { networkRecord } from '../../../lib/enricher/model/records';
import { EnricherSettings, defaultEnricherSettings } from '../../../lib/enricher/config/config';
import { Enricher, createEnricher } from '../../../lib/enricher/pipeline/createEnricher';
import { EnrichedEvent } from '../../../lib/enricher/model/event';
import { WantedTable } from '../../../lib/enricher/model/wanted';
import type { Logger } from '../../../lib/logger';

/** A fresh TestScheduler comparing frames with Jest's deep equality. */
export const newTs = (): TestScheduler => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/**
 * One line per event, for marble values: `action project/name` then what is attached:
 * `[failed]`, `@ip,ip` for the interfaces' IPv4 (`@-` when an instance is attached without one),
 * `{net}` for an attached network, `+p` for project config, `(origin)` unless it came from Incus.
 */
export function summary(event: EnrichedEvent): string {
  let out = `${event.action} ${event.project}/${event.name}`;
  if (event.oldName !== undefined) out += `<${event.oldName}`;
  if (event.status !== 'ok') out += ` [${event.status}]`;
  if (event.instance !== undefined) {
    const ips = event.instance.interfaces.flatMap((i) => i.ipv4);
    out += ` @${ips.length > 0 ? ips.join(',') : '-'}`;
  }
  if (event.network !== undefined) out += ` {${event.network.ipv4 || '-'}}`;
  if (event.projectConfig !== undefined) out += ' +p';
  if (event.origin !== 'incus') out += ` (${event.origin})`;
  return out;
}

/** A small world: the default project with a managed bridge and a few instances. */
export function smallWorld(ts: TestScheduler, latency = 2): FakeIncus {
  const fake = new FakeIncus({ scheduler: ts, latency });
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
  return fake;
}

/** Settings for specs: every default, with what the test says. */
export function settings(overrides: Partial<EnricherSettings> = {}): EnricherSettings {
  return defaultEnricherSettings({ storeFile: undefined, ...overrides });
}

/** A cold store document holding the default project's `br0` and nothing else: loading it makes the enricher warm at once. */
export function warmStore(): ColdStoreDocument {
  return {
    version: 1,
    projects: {
      default: { config: {}, networks: { br0: { name: 'br0', project: 'default', managed: true, type: 'bridge', ipv4: '10.0.0.1/24' } } },
    },
  };
}

export interface Harness {
  enricher: Enricher;
  registry: Registry;
  store: ReturnType<typeof memoryColdStore>;
}

/** An enricher on `events$` and `fake`, timed on `ts`. */
export function harness(
  ts: TestScheduler,
  fake: FakeIncus,
  events$: Observable<IncusStreamItem>,
  options: { config?: Partial<EnricherSettings>; initial?: ColdStoreDocument; wanted?: WantedTable; logger?: Logger } = {},
): Harness {
  const registry = new Registry();
  const store = memoryColdStore(options.initial);
  const enricher = createEnricher({
    events$,
    reader: fake,
    config: settings(options.config),
    registry,
    scheduler: ts,
    store: store.open,
    ...(options.wanted !== undefined ? { wanted: options.wanted } : {}),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  });
  return { enricher, registry, store };
}

/** A subject of stream items, for tests that push rather than draw. */
export const items = (): Subject<IncusStreamItem> => new Subject<IncusStreamItem>();

/** The value of one series in `registry` (0 when absent). */
export async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (found?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>;
  const hit = values.find((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l));
  return hit?.value ?? 0;
}

/**
 * The cold store document of the world `fake` holds now, as a previous run would have stored it:
 * the enricher starts warm, holding every project, network and instance as they are.
 */
export function storeOf(fake: FakeIncus): ColdStoreDocument {
  const latency = fake.latency;
  fake.latency = 0;
  const sync = <T>(source: Observable<T>): T => {
    let value: T | undefined;
    source.subscribe((v) => (value = v)).unsubscribe();
    if (value === undefined) throw new Error('the fake did not answer synchronously');
    return value;
  };
  const model = new FleetModel();
  const world = fake.world();
  for (const project of world.projects) model.setProjectConfig(project, sync(fake.project$(project)).config);
  for (const { owner, name } of world.networks) model.setNetwork(networkRecord(sync(fake.network$(owner, name)), owner));
  for (const { project, name } of world.instances) {
    const record = distillInstance(
      sync(fake.instance$(project, name)),
      sync(fake.instanceState$(project, name)),
      (p, n) => model.resolveNetwork(p, n),
      {
        configExclude: settings().configExclude,
      },
    );
    if (isIncomplete(record)) throw new Error(`${project}/${name} is on an unknown network`);
    model.setInstance(project, name, record);
  }
  fake.latency = latency;
  fake.resetCounts();
  return snapshotModel(model);
}
