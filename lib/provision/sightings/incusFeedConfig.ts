/**
 * The `rxfleet.incus:` section of the provisioner's configuration: where enriched Incus events are
 * read from, which instances they may sight, and the Choria identity each instance maps to. The
 * section present (even `incus: {}`) turns the feed on; absent, `rxfleet provision` has none.
 */
import { InstancesServed, parseInstancesServed } from '../../enricher/model/instancesServed';
import { ProjectsServed, parseProjectsServed } from '../../enricher/model/servedProjects';
import { DEFAULT_IDENTITY_TEMPLATE, IdentityTemplate, IdentityTemplateError, parseIdentityTemplate } from './incusIdentity';

/** The subjects `rxfleet enrich` publishes on by default (its `outputs.nats.subject_prefix`). */
export const DEFAULT_INCUS_SUBJECT_PREFIX = 'incus.events';

/** The feed's settings, parsed. */
export interface IncusFeedSettings {
  /** The enricher's subject prefix: events are read from `<prefix>.*.instance.>`. */
  subjectPrefix: string;
  /** Which projects' instances may be sighted: the enricher's `projects` rule (a list, or a marker on the project's configuration). */
  projects: ProjectsServed;
  /** Which instances may be sighted: the enricher's `instances` selectors (labels, name patterns). */
  instances: InstancesServed;
  identity: IdentityTemplate;
}

/** The feed with every default: every project, every instance, the identity the instance's name. */
export function defaultIncusFeed(): IncusFeedSettings {
  return {
    subjectPrefix: DEFAULT_INCUS_SUBJECT_PREFIX,
    projects: { mode: 'all' },
    instances: { mode: 'all' },
    identity: parseIdentityTemplate(DEFAULT_IDENTITY_TEMPLATE),
  };
}

const stringOrList = (expected: string) => ({
  anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string', expected: 'a string' } }],
  default: [],
  expected,
});

/** The JSON Schema of the section (draft 7, with the configuration's `expected` annotation). */
export const INCUS_FEED_SCHEMA = {
  type: 'object',
  expected: 'a mapping of subject_prefix, projects, instances and identity ({} for every default)',
  properties: {
    subject_prefix: {
      type: 'string',
      default: DEFAULT_INCUS_SUBJECT_PREFIX,
      pattern: '^[^\\s*>.]+(\\.[^\\s*>.]+)*$',
      expected: "the enricher's subject prefix, such as incus.events (no wildcard, space or empty part)",
    },
    projects: stringOrList('a list of project names, or one KEY=VALUE marker on the project configuration'),
    instances: stringOrList('a selector or a list of them: KEY=VALUE on the instance configuration, or a name pattern such as web-*'),
    identity: { type: 'string', default: DEFAULT_IDENTITY_TEMPLATE, expected: 'an identity template such as {name} or {name}.example.net' },
  },
} as const;

/** The section as the schema leaves it (defaults filled in). */
export interface RawIncusFeed {
  subject_prefix: string;
  projects: string | string[];
  instances: string | string[];
  identity: string;
}

/**
 * The feed's settings from its section, every problem reported through `error` with its key's
 * path (`rxfleet.incus.instances[1]`); `undefined` when any was found. `usable` says whether the
 * schema let a key through (a key it refused is not looked at again, its siblings are). Selectors
 * are parsed as the enricher parses its own; the template as {@link parseIdentityTemplate}.
 */
export function parseIncusFeed(
  raw: RawIncusFeed,
  error: (path: string, message: string) => void,
  usable: (path: string) => boolean = () => true,
): IncusFeedSettings | undefined {
  let ok = ['subject_prefix', 'projects', 'instances', 'identity'].every((key) => usable(`rxfleet.incus.${key}`));
  if (usable('rxfleet.incus.instances')) {
    const list = typeof raw.instances === 'string' ? [raw.instances] : raw.instances;
    list.forEach((selector, index) => {
      try {
        parseInstancesServed(selector);
      } catch (e) {
        ok = false;
        error(typeof raw.instances === 'string' ? 'rxfleet.incus.instances' : `rxfleet.incus.instances[${index}]`, (e as Error).message);
      }
    });
  }
  let identity: IdentityTemplate | undefined;
  if (usable('rxfleet.incus.identity')) {
    try {
      identity = parseIdentityTemplate(raw.identity);
      const volatile = identity.configKeys.find((key) => key.startsWith('volatile.'));
      if (volatile !== undefined) {
        ok = false;
        error('rxfleet.incus.identity', `{config.${volatile}}: the enricher never publishes volatile.* keys, so no instance would map`);
      }
    } catch (e) {
      if (!(e instanceof IdentityTemplateError)) throw e;
      ok = false;
      error('rxfleet.incus.identity', e.message);
    }
  }
  if (!ok || identity === undefined) return undefined;
  return {
    subjectPrefix: raw.subject_prefix,
    projects: parseProjectsServed(raw.projects),
    instances: parseInstancesServed(raw.instances),
    identity,
  };
}
