/**
 * The fleet as the enricher holds it: projects, their instances and the networks they own.
 *
 * It belongs to the enricher's one owner: nothing here is locked or copied, and nothing reads or
 * writes it from a read in flight. A read hands its answer back and the patch happens where the
 * model lives.
 */
import { InstanceRecord, NetworkRecord, configsEqual, instancesEqual, isTrue, networksEqual } from './records';

interface ProjectEntry {
  /** `null`: never read. `{}`: read, and sets nothing. */
  config: Readonly<Record<string, string>> | null;
  instances: Map<string, InstanceRecord>;
  networks: Map<string, NetworkRecord>;
}

/** An instance's address in the model. */
export interface InstanceKey {
  readonly project: string;
  readonly name: string;
}

/** The projects, instances and networks the enricher holds. */
export class FleetModel {
  private readonly projects = new Map<string, ProjectEntry>();
  private instanceTotal = 0;
  private networkTotal = 0;
  /** Set by every write, cleared by whoever stores the model. */
  dirty = false;

  /** Projects held. */
  get projectCount(): number {
    return this.projects.size;
  }

  /** Instances held, across every project. */
  get instanceCount(): number {
    return this.instanceTotal;
  }

  /** Networks held, across every owner. */
  get networkCount(): number {
    return this.networkTotal;
  }

  // Write paths create a project on demand; read paths never do.
  private entry(project: string): ProjectEntry {
    let entry = this.projects.get(project);
    if (entry === undefined) {
      entry = { config: null, instances: new Map(), networks: new Map() };
      this.projects.set(project, entry);
    }
    return entry;
  }

  /** Names of the projects held, in the order they were first held. */
  projectNames(): string[] {
    return [...this.projects.keys()];
  }

  hasProject(project: string): boolean {
    return this.projects.has(project);
  }

  /** The project's own configuration: `undefined` when the project is not held, `null` when held but never read. */
  projectConfig(project: string): Readonly<Record<string, string>> | null | undefined {
    return this.projects.get(project)?.config;
  }

  /** Stores a project's configuration; whether it differs from what was held. */
  setProjectConfig(project: string, config: Readonly<Record<string, string>>): boolean {
    const entry = this.entry(project);
    if (configsEqual(entry.config, config)) return false;
    entry.config = { ...config };
    this.dirty = true;
    return true;
  }

  /** Removes a project with everything it holds; returns the names of the instances it held. */
  deleteProject(project: string): string[] {
    const entry = this.projects.get(project);
    if (entry === undefined) return [];
    this.projects.delete(project);
    this.instanceTotal -= entry.instances.size;
    this.networkTotal -= entry.networks.size;
    this.dirty = true;
    return [...entry.instances.keys()];
  }

  /** The project that owns the networks `project` sees: itself with `features.networks`, else `default`. */
  networkOwner(project: string): string {
    if (project === 'default') return project;
    return isTrue(this.projects.get(project)?.config?.['features.networks']) ? project : 'default';
  }

  instance(project: string, name: string): InstanceRecord | undefined {
    return this.projects.get(project)?.instances.get(name);
  }

  /** Stores an instance record; whether it differs from what was held. */
  setInstance(project: string, name: string, record: InstanceRecord): boolean {
    const entry = this.entry(project);
    const held = entry.instances.get(name);
    if (held !== undefined && instancesEqual(held, record)) return false;
    if (held === undefined) this.instanceTotal++;
    entry.instances.set(name, record);
    this.dirty = true;
    return true;
  }

  /** Removes an instance; whether it was held. */
  deleteInstance(project: string, name: string): boolean {
    const entry = this.projects.get(project);
    if (entry === undefined || !entry.instances.delete(name)) return false;
    this.instanceTotal--;
    this.dirty = true;
    return true;
  }

  /** Names of the instances held in `project`. */
  instanceNames(project: string): string[] {
    return [...(this.projects.get(project)?.instances.keys() ?? [])];
  }

  /** Every instance held, project by project. */
  *instances(): IterableIterator<[InstanceKey, InstanceRecord]> {
    for (const [project, entry] of this.projects) {
      for (const [name, record] of entry.instances) yield [{ project, name }, record];
    }
  }

  network(owner: string, name: string): NetworkRecord | undefined {
    return this.projects.get(owner)?.networks.get(name);
  }

  /** A network as an instance of `project` sees it: its own project's first, then `default`'s. */
  resolveNetwork(project: string, name: string): NetworkRecord | undefined {
    return this.network(project, name) ?? (project === 'default' ? undefined : this.network('default', name));
  }

  /** Stores a network under its owner; whether it differs from what was held. */
  setNetwork(record: NetworkRecord): boolean {
    const entry = this.entry(record.project);
    const held = entry.networks.get(record.name);
    if (networksEqual(held, record)) return false;
    if (held === undefined) this.networkTotal++;
    entry.networks.set(record.name, record);
    this.dirty = true;
    return true;
  }

  /** Removes a network; whether it was held. */
  deleteNetwork(owner: string, name: string): boolean {
    const entry = this.projects.get(owner);
    if (entry === undefined || !entry.networks.delete(name)) return false;
    this.networkTotal--;
    this.dirty = true;
    return true;
  }

  /** Names of the networks `owner` holds. */
  networkNames(owner: string): string[] {
    return [...(this.projects.get(owner)?.networks.keys() ?? [])];
  }

  /** Every instance with an interface on the network `owner`/`name`. */
  instancesOn(owner: string, name: string): InstanceKey[] {
    const key = `${owner}/${name}`;
    const found: InstanceKey[] = [];
    for (const [at, record] of this.instances()) if (record.networks[key] !== undefined) found.push(at);
    return found;
  }

  /**
   * Every instance using the profile `project`/`profile`: in `project` itself, and, for a profile
   * of `default`, in every project that does not have its own profiles (`features.profiles`).
   */
  instancesUsingProfile(project: string, profile: string): InstanceKey[] {
    const found: InstanceKey[] = [];
    for (const [at, record] of this.instances()) {
      const sees =
        at.project === project || (project === 'default' && !isTrue(this.projects.get(at.project)?.config?.['features.profiles']));
      if (sees && record.profiles.includes(profile)) found.push(at);
    }
    return found;
  }
}
