/**
 * What the enricher holds about the fleet and attaches to events: distilled, immutable records,
 * never the raw REST answers. A record is replaced, never edited, so an event that carries one
 * can be kept (in the archive, in the line) without copying it.
 */
import { IncusNetwork } from '../../incus/api';

/** A network, as an instance on it or a network event sees it. */
export interface NetworkRecord {
  readonly name: string;
  /** The project that owns it: its own when it has `features.networks`, else `default`. */
  readonly project: string;
  readonly managed: boolean;
  /** `bridge`, `ovn`, `physical`, ... */
  readonly type: string;
  /** The configured `ipv4.address` of a managed network (gateway with prefix), else `''`. */
  readonly ipv4: string;
  /** The configured `ipv6.address` of a managed network, else `''`. */
  readonly ipv6: string;
}

/** One interface of an instance, placed on the network it sits on. */
export interface InterfaceRecord {
  /** The guest's name for it (`eth0`). */
  readonly name: string;
  /** The device that made it (the key under `devices`, which may differ from the guest name). */
  readonly device: string;
  /** The project owning the network. */
  readonly project: string;
  readonly network: string;
  readonly managed: boolean;
  /** Global-scope IPv4 addresses, sorted, without prefix length. */
  readonly ipv4: readonly string[];
  /** Global-scope IPv6 addresses, sorted, without prefix length. */
  readonly ipv6: readonly string[];
}

/** An instance as the model holds it. */
export interface InstanceRecord {
  /** `container` or `virtual-machine`. */
  readonly type: string;
  /** As Incus reports it: `Running`, `Stopped`, `Frozen`, ... */
  readonly status: string;
  /** Status code 103. */
  readonly running: boolean;
  /** Cluster member, when reported. */
  readonly location: string;
  readonly profiles: readonly string[];
  /** Expanded configuration (own configuration when none is expanded) without `volatile.*` and other excluded keys. */
  readonly config: Readonly<Record<string, string>>;
  /** Sorted by project/network, then name. */
  readonly interfaces: readonly InterfaceRecord[];
  /** Every network an interface sits on, keyed `<project>/<network>`. */
  readonly networks: Readonly<Record<string, NetworkRecord>>;
}

/**
 * Incus's notion of a true configuration value (`incusutil.IsTrue`): `1`, `true`, `yes` and `on`,
 * case-insensitively. `features.networks=1` owns its networks too.
 */
export function isTrue(value: string | undefined): boolean {
  if (value === undefined) return false;
  return ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());
}

// "none" and "auto" are settings, not addresses: a consumer wants a gateway or nothing.
function configuredAddress(value: string | undefined): string {
  if (value === undefined || value === 'none' || value === 'auto') return '';
  return value;
}

/** The record of a network answer, owned by `owner` (the answer's own `project` wins when the server says). */
export function networkRecord(network: IncusNetwork, owner: string): NetworkRecord {
  const managed = network.managed === true;
  return {
    name: network.name,
    project: network.project !== undefined && network.project !== '' ? network.project : owner,
    managed,
    type: network.type ?? '',
    ipv4: managed ? configuredAddress(network.config?.['ipv4.address']) : '',
    ipv6: managed ? configuredAddress(network.config?.['ipv6.address']) : '',
  };
}

/** Field-by-field equality of two network records. */
export function networksEqual(a: NetworkRecord | undefined, b: NetworkRecord | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return (
    a.name === b.name && a.project === b.project && a.managed === b.managed && a.type === b.type && a.ipv4 === b.ipv4 && a.ipv6 === b.ipv6
  );
}

/** Equality of two string maps (a `null` map, "never read", equals only another `null`). */
export function configsEqual(
  a: Readonly<Record<string, string>> | null | undefined,
  b: Readonly<Record<string, string>> | null | undefined,
): boolean {
  if (a === b) return true;
  if (a == null || b == null) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.prototype.hasOwnProperty.call(b, key) && a[key] === b[key]);
}

function listsEqual(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

function interfacesEqual(a: InterfaceRecord, b: InterfaceRecord): boolean {
  return (
    a.name === b.name &&
    a.device === b.device &&
    a.project === b.project &&
    a.network === b.network &&
    a.managed === b.managed &&
    listsEqual(a.ipv4, b.ipv4) &&
    listsEqual(a.ipv6, b.ipv6)
  );
}

/** Structural equality of two instance records: every field, interfaces in order, networks by key. */
export function instancesEqual(a: InstanceRecord | undefined, b: InstanceRecord | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (a.type !== b.type || a.status !== b.status || a.running !== b.running || a.location !== b.location) return false;
  if (!listsEqual(a.profiles, b.profiles) || !configsEqual(a.config, b.config)) return false;
  if (a.interfaces.length !== b.interfaces.length || !a.interfaces.every((iface, i) => interfacesEqual(iface, b.interfaces[i])))
    return false;
  const nets = Object.keys(a.networks);
  if (nets.length !== Object.keys(b.networks).length) return false;
  return nets.every((key) => networksEqual(a.networks[key], b.networks[key]));
}
