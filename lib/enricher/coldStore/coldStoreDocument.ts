/**
 * The cold store's format: the model as JSON, so a restart can serve what the last run held
 * (DECISIONS E1) while the first round corrects it.
 *
 * ```json
 * {"version": 1, "projects": {"<project>": {
 *   "config": {...} | null,
 *   "instances": {"<name>": {"type", "status", "running", "location", "profiles", "config",
 *                            "interfaces": [{"name", "device", "project", "network", "managed", "ipv4", "ipv6"}],
 *                            "networks": {"<owner>/<net>": {"name", "project", "managed", "type", "ipv4", "ipv6"}}}},
 *   "networks": {"<net>": {"name", "project", "managed", "type", "ipv4", "ipv6"}}}}}
 * ```
 * `config` is never left out (`null` is "never read", `{}` "sets nothing"); `instances`,
 * `networks`, `interfaces`, `profiles`, `ipv4` and `ipv6` are left out when empty.
 */
import Ajv from 'ajv';
import { FleetModel } from '../model/FleetModel';
import { InstanceRecord, InterfaceRecord, NetworkRecord } from '../model/records';

const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;
const network = {
  type: 'object',
  required: ['name', 'project', 'managed'],
  properties: {
    name: { type: 'string' },
    project: { type: 'string' },
    managed: { type: 'boolean' },
    type: { type: 'string' },
    ipv4: { type: 'string' },
    ipv6: { type: 'string' },
  },
} as const;

// An instance here is not the payload's (EVENT_PAYLOAD_SCHEMA): the file leaves empty lists out and
// is read back by this version only, while a payload always carries every field for any consumer;
// one schema for both would be one of them with every difference as a flag.
/** JSON Schema of a cold store file; a file that does not match is ignored (logged), never half-loaded. */
export const COLD_STORE_SCHEMA = {
  $id: 'https://rxfleet.dev/schemas/enricher-cold-store.json',
  type: 'object',
  required: ['version', 'projects'],
  properties: {
    version: { const: 1 },
    projects: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['config'],
        properties: {
          config: { anyOf: [stringMap, { type: 'null' }] },
          instances: {
            type: 'object',
            additionalProperties: {
              type: 'object',
              required: ['running', 'config'],
              properties: {
                type: { type: 'string' },
                status: { type: 'string' },
                running: { type: 'boolean' },
                location: { type: 'string' },
                profiles: strings,
                config: stringMap,
                interfaces: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['project', 'network', 'managed'],
                    properties: {
                      name: { type: 'string' },
                      device: { type: 'string' },
                      project: { type: 'string' },
                      network: { type: 'string' },
                      managed: { type: 'boolean' },
                      ipv4: strings,
                      ipv6: strings,
                    },
                  },
                },
                networks: { type: 'object', additionalProperties: network },
              },
            },
          },
          networks: { type: 'object', additionalProperties: network },
        },
      },
    },
  },
} as const;

interface StoredNetwork {
  name: string;
  project: string;
  managed: boolean;
  type?: string;
  ipv4?: string;
  ipv6?: string;
}

interface StoredInterface {
  name?: string;
  device?: string;
  project: string;
  network: string;
  managed: boolean;
  ipv4?: string[];
  ipv6?: string[];
}

interface StoredInstance {
  type?: string;
  status?: string;
  running: boolean;
  location?: string;
  profiles?: string[];
  config: Record<string, string>;
  interfaces?: StoredInterface[];
  networks?: Record<string, StoredNetwork>;
}

interface StoredProject {
  config: Record<string, string> | null;
  instances?: Record<string, StoredInstance>;
  networks?: Record<string, StoredNetwork>;
}

/** The cold store document. */
export interface ColdStoreDocument {
  version: 1;
  projects: Record<string, StoredProject>;
}

function storeNetwork(n: NetworkRecord): StoredNetwork {
  const out: StoredNetwork = { name: n.name, project: n.project, managed: n.managed };
  if (n.type !== '') out.type = n.type;
  if (n.ipv4 !== '') out.ipv4 = n.ipv4;
  if (n.ipv6 !== '') out.ipv6 = n.ipv6;
  return out;
}

function storeInterface(i: InterfaceRecord): StoredInterface {
  const out: StoredInterface = { name: i.name, device: i.device, project: i.project, network: i.network, managed: i.managed };
  if (i.ipv4.length > 0) out.ipv4 = [...i.ipv4];
  if (i.ipv6.length > 0) out.ipv6 = [...i.ipv6];
  return out;
}

function storeInstance(r: InstanceRecord): StoredInstance {
  const out: StoredInstance = { type: r.type, status: r.status, running: r.running, config: { ...r.config } };
  if (r.location !== '') out.location = r.location;
  if (r.profiles.length > 0) out.profiles = [...r.profiles];
  if (r.interfaces.length > 0) out.interfaces = r.interfaces.map(storeInterface);
  const nets = Object.entries(r.networks);
  if (nets.length > 0) out.networks = Object.fromEntries(nets.map(([k, n]) => [k, storeNetwork(n)]));
  return out;
}

/** The document for what `model` holds now. */
export function snapshotModel(model: FleetModel): ColdStoreDocument {
  const projects: Record<string, StoredProject> = {};
  for (const project of model.projectNames()) {
    const config = model.projectConfig(project);
    const entry: StoredProject = { config: config == null ? null : { ...config } };
    const instances = model.instanceNames(project);
    if (instances.length > 0)
      entry.instances = Object.fromEntries(instances.map((name) => [name, storeInstance(model.instance(project, name) as InstanceRecord)]));
    const networks = model.networkNames(project);
    if (networks.length > 0)
      entry.networks = Object.fromEntries(networks.map((name) => [name, storeNetwork(model.network(project, name) as NetworkRecord)]));
    projects[project] = entry;
  }
  return { version: 1, projects };
}

function loadNetwork(n: StoredNetwork): NetworkRecord {
  return { name: n.name, project: n.project, managed: n.managed, type: n.type ?? '', ipv4: n.ipv4 ?? '', ipv6: n.ipv6 ?? '' };
}

function loadInstance(s: StoredInstance): InstanceRecord {
  return {
    type: s.type ?? '',
    status: s.status ?? (s.running ? 'Running' : 'Stopped'),
    running: s.running,
    location: s.location ?? '',
    profiles: s.profiles ?? [],
    config: s.config,
    interfaces: (s.interfaces ?? []).map((i) => ({
      name: i.name ?? '',
      device: i.device ?? '',
      project: i.project,
      network: i.network,
      managed: i.managed,
      ipv4: i.ipv4 ?? [],
      ipv6: i.ipv6 ?? [],
    })),
    networks: Object.fromEntries(Object.entries(s.networks ?? {}).map(([k, n]) => [k, loadNetwork(n)])),
  };
}

const validate = new Ajv({ allErrors: false }).compile<ColdStoreDocument>(COLD_STORE_SCHEMA);

/** Checks a parsed document against {@link COLD_STORE_SCHEMA}; the first problem, or `undefined`. */
export function coldStoreProblem(document: unknown): string | undefined {
  if (validate(document)) return undefined;
  const first = validate.errors?.[0];
  return first === undefined ? 'not a cold store document' : `${first.instancePath || '/'} ${first.message ?? 'is invalid'}`;
}

/** A model holding what `document` describes (a clean model: nothing to write back yet). */
export function modelFromSnapshot(document: ColdStoreDocument): FleetModel {
  const model = new FleetModel();
  for (const [project, stored] of Object.entries(document.projects)) {
    if (stored.config !== null) model.setProjectConfig(project, stored.config);
    for (const n of Object.values(stored.networks ?? {})) model.setNetwork(loadNetwork(n));
    for (const [name, s] of Object.entries(stored.instances ?? {})) model.setInstance(project, name, loadInstance(s));
  }
  model.dirty = false;
  return model;
}
