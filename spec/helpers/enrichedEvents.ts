import { EventPayload } from '../../lib/enricher/output/payload';
import { subjectFor } from '../../lib/enricher/output/subject';

/** What an instance event is made of, as {@link instanceEvent} takes it. */
export interface InstanceEventOptions {
  project?: string;
  running?: boolean;
  ipv4?: string[];
  ipv6?: string[];
  config?: Record<string, string>;
  origin?: EventPayload['origin'];
  projectConfig?: Record<string, string>;
}

/**
 * An instance event exactly as `rxfleet enrich` publishes it (the payload's JSON Schema holds for
 * it), for specs that stand in for the enricher on NATS or in-process: by default running, with
 * a lease on eth0.
 */
export function instanceEvent(action: string, name: string, options: InstanceEventOptions = {}): EventPayload {
  const project = options.project ?? 'default';
  const running = options.running ?? true;
  return {
    version: 1,
    action,
    kind: 'instance',
    project,
    name,
    status: 'ok',
    origin: options.origin ?? 'incus',
    received: new Date().toISOString(),
    timestamp: new Date().toISOString(),
    location: 'none',
    enriched: ['instance', 'interfaces', 'project'],
    instance: {
      type: 'container',
      status: running ? 'Running' : 'Stopped',
      running,
      location: 'none',
      profiles: ['default'],
      config: options.config ?? {},
      interfaces: [
        {
          name: 'eth0',
          device: 'eth0',
          project,
          network: 'rxbr0',
          managed: true,
          ipv4: options.ipv4 ?? (running ? ['10.77.0.9'] : []),
          ipv6: options.ipv6 ?? [],
        },
      ],
      networks: { [`${project}/rxbr0`]: { name: 'rxbr0', project, managed: true, type: 'bridge', ipv4: '10.77.0.1/24', ipv6: '' } },
    },
    project_config: options.projectConfig ?? {},
  };
}

/** The subject `rxfleet enrich` publishes `event` on under `prefix`. */
export function subjectOf(event: EventPayload, prefix = 'incus.events'): string {
  return subjectFor(prefix, event);
}
