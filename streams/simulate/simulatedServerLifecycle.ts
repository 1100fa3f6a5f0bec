import {
  LifecycleFormat,
  LifecycleType,
  SERVER_COMPONENT,
  lifecycleEventJson,
  lifecycleSubject,
  newLifecycleEvent,
} from '../../lib/choria/lifecycle';
import { leavesProvisioning } from '../../lib/simulate/serverAgents';
import { SimulatedNode } from '../../lib/simulate/simulatedNode';
import { SimulatedFleetRuntime } from './simulatedFleetRuntime';
import { definedFields } from '../../lib/definedFields';

/** How a fleet's servers announce themselves and how long their restarts and shutdowns take. */
export interface ServerLifecycleSettings {
  /** Startup events as CloudEvents or in the legacy Choria format. */
  lifecycleFormat: LifecycleFormat;
  /** The lifecycle component while in provisioning mode. */
  component: string;
  /** Replaces the server's restart splay, ms. */
  restartDelayMs?: number;
  /** Replaces the server's shutdown delay, ms. */
  shutdownDelayMs?: number;
}

/**
 * The lives of a fleet's servers as go-choria lives them: a `startup` event at boot, a restart
 * that publishes `shutdown`, waits the splay and comes back (provisioned when the written
 * configuration leaves provisioning mode, in provisioning mode again otherwise, on the new version
 * after an upgrade), and a shutdown after its delay. Its timing goes through the runtime, so
 * nothing happens after the fleet stops.
 */
export class SimulatedServerLifecycle {
  constructor(
    private readonly runtime: SimulatedFleetRuntime,
    private readonly settings: ServerLifecycleSettings,
  ) {}

  /** Publishes a lifecycle event for the node, under the provisioning component unless another is named. */
  publish(node: SimulatedNode, type: LifecycleType, fields: { version?: string; newVersion?: string; component?: string } = {}): void {
    const eventComponent = fields.component ?? this.settings.component;
    const event = newLifecycleEvent(type, {
      identity: node.identity,
      component: eventComponent,
      ...definedFields({ version: fields.version, newVersion: fields.newVersion }),
    });
    this.runtime.publish(lifecycleSubject(type, eventComponent), lifecycleEventJson(event, this.settings.lifecycleFormat));
  }

  /** The node's first boot: into provisioning mode, announced by its startup event. */
  boot(node: SimulatedNode): void {
    node.state = 'provisioning';
    node.boots++;
    this.publish(node, 'startup', { version: node.version });
    this.runtime.emit('booted', node);
  }

  /** A restart after `seconds` (or `restartDelayMs`), into `upgradeTo` when given; one at a time per node. */
  restart(node: SimulatedNode, seconds: number, upgradeTo?: string): void {
    if (node.restartPending) return;
    node.restartPending = true;
    this.runtime.later(0, () => this.publish(node, 'shutdown'));
    this.runtime.later(this.settings.restartDelayMs ?? seconds * 1000, () => this.reboot(node, upgradeTo));
  }

  /**
   * A shutdown after `seconds` (or `shutdownDelayMs`): the node stops answering for good. Without a
   * `shutdown` event: go-choria's shutdown action stops processing and exits (`restartViaExit`),
   * publishing nothing, where its restart publishes one first.
   */
  shutdown(node: SimulatedNode, seconds: number): void {
    this.runtime.counters.shutdownRequests++;
    this.runtime.later(this.settings.shutdownDelayMs ?? seconds * 1000, () => {
      node.state = 'shutdown';
      this.runtime.emit('shutdown', node);
    });
  }

  // A restart: go-choria publishes `shutdown`, waits the splay, then execs itself; the new process
  // has a new ECDH key (none until the next jwt call) and no lock.
  private reboot(node: SimulatedNode, upgradeTo?: string): void {
    node.restartPending = false;
    node.ecdh = undefined;
    node.lock = undefined;
    node.boots++;
    if (upgradeTo !== undefined) {
      node.version = upgradeTo;
      this.publish(node, 'startup', { version: node.version });
    } else if (leavesProvisioning(node.configuration)) {
      node.state = 'provisioned';
      node.provisioned++;
      this.publish(node, 'startup', { version: node.version, component: SERVER_COMPONENT });
      this.runtime.emit('provisioned', node);
    } else {
      node.provisioningLoops++;
      this.runtime.counters.provisioningLoops++;
      this.publish(node, 'startup', { version: node.version });
      this.runtime.emit('provisioning-loop', node);
    }
  }
}
