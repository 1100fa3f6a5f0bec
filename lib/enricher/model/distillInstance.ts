/**
 * Distils what Incus answers about an instance into the record the model holds: its expanded
 * configuration without `volatile.*`, and each interface placed on a network the model knows.
 */
import { IncusInstance, IncusInstanceState } from '../../incus/api';
import { InstanceRecord, InterfaceRecord, NetworkRecord } from './records';

/** Finds a network the model holds by owner and name. */
export type NetworkLookup = (project: string, name: string) => NetworkRecord | undefined;

/** The answer could not be placed: an interface sits on a network the model does not hold. */
export interface Incomplete {
  readonly incomplete: true;
  /** The network name the NIC device names. */
  readonly network: string;
}

/** Options for {@link distillInstance}. */
export interface DistillOptions {
  /**
   * Configuration keys left out of the record, by prefix. `volatile.` is always left out: a DHCP
   * lease writes keys nobody here reads, and without stripping them every renewal would be an
   * event.
   */
  configExclude?: readonly string[];
}

const RUNNING = 103;

/** The instance's expanded configuration, or its own when nothing is expanded. */
function effectiveConfig(instance: IncusInstance): Record<string, string> {
  const expanded = instance.expanded_config;
  return expanded !== undefined && Object.keys(expanded).length > 0 ? expanded : (instance.config ?? {});
}

function effectiveDevices(instance: IncusInstance): Record<string, Record<string, string>> {
  const expanded = instance.expanded_devices;
  return expanded !== undefined && Object.keys(expanded).length > 0 ? expanded : (instance.devices ?? {});
}

function nicDevices(instance: IncusInstance): Array<[string, Record<string, string>]> {
  return Object.entries(effectiveDevices(instance)).filter(([, device]) => device.type === 'nic');
}

/** Whether the instance has a NIC device at all (only then is an address worth waiting for). */
export function hasNic(instance: IncusInstance): boolean {
  return nicDevices(instance).length > 0;
}

/**
 * A virtual machine whose agent is not running reports no interfaces from inside; waiting for an
 * address it will never report would hold its events for the whole timeout.
 */
export function isVmWithoutAgent(instance: IncusInstance, state: IncusInstanceState | undefined): boolean {
  if (instance.type !== 'virtual-machine') return false;
  if (state !== undefined && (state.processes ?? 0) > 0) return false;
  return effectiveConfig(instance)['volatile.last_state.agent'] !== 'STARTED';
}

/**
 * Whether the state reports a global address, IPv4 or IPv6, on any interface other than loopback.
 * An IPv6-only instance (a bridge with `ipv4.address=none`, addressed by SLAAC or DHCPv6) has
 * its address: waiting for an IPv4 it will never get would hold its events, and the line behind
 * them, for the whole address timeout.
 */
export function hasGlobalAddress(state: IncusInstanceState | undefined): boolean {
  if (state == null || state.network == null) return false;
  return Object.values(state.network).some(
    (iface) =>
      iface.type !== 'loopback' &&
      (iface.addresses ?? []).some((a) => (a.family === 'inet' || a.family === 'inet6') && a.scope === 'global'),
  );
}

// PR #193 upstream: profiles may name the NIC device `eth-1` while the guest still calls it
// `eth0`, so the device key is the last resort. What Incus records about the NIC comes first.
function findDevice(
  instance: IncusInstance,
  config: Record<string, string>,
  ifaceName: string,
  hwaddr: string | undefined,
): [string, Record<string, string>] | undefined {
  const nics = nicDevices(instance);
  if (hwaddr !== undefined && hwaddr !== '') {
    const wanted = hwaddr.toLowerCase();
    const byHw = nics.find(([key, device]) => (config[`volatile.${key}.hwaddr`] ?? device.hwaddr ?? '').toLowerCase() === wanted);
    if (byHw !== undefined) return byHw;
  }
  const byName = nics.find(([key, device]) => (config[`volatile.${key}.name`] ?? device.name) === ifaceName);
  if (byName !== undefined) return byName;
  return nics.find(([key]) => key === ifaceName);
}

function globalAddresses(addresses: readonly { family: string; address: string; scope: string }[], family: string): string[] {
  return addresses
    .filter((a) => a.family === family && a.scope === 'global')
    .map((a) => a.address)
    .sort();
}

function keep(config: Record<string, string>, exclude: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(config).sort()) {
    if (key.startsWith('volatile.') || exclude.some((prefix) => key.startsWith(prefix))) continue;
    out[key] = config[key];
  }
  return out;
}

/**
 * The record for an instance answer, or {@link Incomplete} when an interface names a network
 * `lookup` does not know.
 *
 * Each interface the state reports (loopback aside) is matched to its NIC device by hardware
 * address, then by the name Incus recorded for it (`volatile.<dev>.name` or the device's `name`),
 * then by device key; its network is the device's `network`, else its `parent`, resolved in the
 * instance's own project and then in `default`. A virtual machine without its agent reports no
 * interfaces, so each NIC is placed from its device, with its static `ipv4.address` if any.
 *
 * Incomplete is not a partial record on purpose: storing the subset would make it permanent, since
 * the change that would fix it (a network appearing) is not an instance event, and the instance
 * would be missing from that network for the life of the process.
 */
export function distillInstance(
  instance: IncusInstance,
  state: IncusInstanceState | undefined,
  lookup: NetworkLookup,
  options: DistillOptions = {},
): InstanceRecord | Incomplete {
  const config = effectiveConfig(instance);
  const project = instance.project || 'default';
  const interfaces: InterfaceRecord[] = [];
  const networks: Record<string, NetworkRecord> = {};

  const place = (name: string, device: string, spec: Record<string, string>, ipv4: string[], ipv6: string[]): Incomplete | undefined => {
    const networkName = spec.network || spec.parent || '';
    if (networkName === '') return undefined;
    const network = lookup(project, networkName) ?? (project === 'default' ? undefined : lookup('default', networkName));
    if (network === undefined) return { incomplete: true, network: networkName };
    interfaces.push({ name, device, project: network.project, network: network.name, managed: network.managed, ipv4, ipv6 });
    networks[`${network.project}/${network.name}`] = network;
    return undefined;
  };

  const reported = Object.entries(state?.network ?? {}).filter(([, iface]) => iface.type !== 'loopback');
  if (reported.length === 0 && isVmWithoutAgent(instance, state)) {
    for (const [key, device] of nicDevices(instance)) {
      const staticV4 = device['ipv4.address'];
      const missing = place(device.name ?? key, key, device, staticV4 ? [staticV4] : [], []);
      if (missing !== undefined) return missing;
    }
  } else {
    for (const [ifaceName, iface] of reported) {
      const found = findDevice(instance, config, ifaceName, iface.hwaddr);
      if (found === undefined) continue;
      const addresses = iface.addresses ?? [];
      const missing = place(ifaceName, found[0], found[1], globalAddresses(addresses, 'inet'), globalAddresses(addresses, 'inet6'));
      if (missing !== undefined) return missing;
    }
  }
  interfaces.sort((a, b) => `${a.project}/${a.network}/${a.name}`.localeCompare(`${b.project}/${b.network}/${b.name}`));

  return {
    type: instance.type ?? '',
    status: instance.status ?? '',
    running: instance.status_code === RUNNING,
    location: instance.location ?? '',
    profiles: [...(instance.profiles ?? [])],
    config: keep(config, options.configExclude ?? []),
    interfaces,
    networks,
  };
}

/** Whether distilling failed for want of a network. */
export function isIncomplete(result: InstanceRecord | Incomplete): result is Incomplete {
  return (result as Incomplete).incomplete === true;
}

/**
 * Whether a running instance is still owed an address: it has a NIC, no interface carries a
 * global address yet, and it is not a virtual machine without its agent. Such a record is
 * stored and sent, and the key is read again soon: a lease landing writes only `volatile.*`,
 * so nothing but another read will ever notice it.
 */
export function awaitingAddress(instance: IncusInstance, state: IncusInstanceState | undefined, record: InstanceRecord): boolean {
  if (!record.running || !hasNic(instance) || isVmWithoutAgent(instance, state)) return false;
  return record.interfaces.every((iface) => iface.ipv4.length === 0 && iface.ipv6.length === 0);
}
