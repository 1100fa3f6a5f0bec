import { IncusLifecycleEvent } from '../../incus/api';
import { EnrichedEvent, newEvent } from '../model/event';
import { WantedTable } from '../model/wanted';

/** Why an Incus event did not become an enricher event. */
export type DecodeRefusal =
  /** It is missing what every event needs (an action, a project, a name). */
  | { refused: 'malformed'; reason: string }
  /** Nobody asked for its action. */
  | { refused: 'unwanted'; action: string };

// A name or project that cannot be a name: NATS subjects, log lines and store keys are built from
// them, so a frame that carries one is refused rather than trusted.
const MAX_NAME = 256;
function badName(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return value.length > MAX_NAME || /[\u0000-\u001f/]/.test(value);
}

/**
 * The enricher event for a lifecycle event the listener decoded (either shape, DECISIONS E9), or
 * why there is none: an action nobody wants is refused here, at the door, so it costs nothing
 * further; one missing its action, project or name, or naming them with characters no Incus name
 * has, is malformed.
 */
export function decodeEvent(incus: IncusLifecycleEvent, wanted: WantedTable, received: number): EnrichedEvent | DecodeRefusal {
  const action = typeof incus.action === 'string' ? incus.action : '';
  const project = typeof incus.project === 'string' ? incus.project : '';
  const name = typeof incus.name === 'string' ? incus.name : '';
  if (action === '') return { refused: 'malformed', reason: 'event without an action' };
  if (project === '') return { refused: 'malformed', reason: `${action} without a project` };
  if (name === '') return { refused: 'malformed', reason: `${action} without a name` };
  if (badName(project) || badName(name) || (incus.oldName !== undefined && badName(incus.oldName))) {
    return { refused: 'malformed', reason: `${action} with an impossible name or project` };
  }
  if (!wanted.has(action)) return { refused: 'unwanted', action };
  return newEvent({
    action,
    project,
    name,
    oldName: typeof incus.oldName === 'string' ? incus.oldName : undefined,
    origin: 'incus',
    received,
    timestamp: typeof incus.timestamp === 'string' ? incus.timestamp : undefined,
    location: typeof incus.location === 'string' && incus.location !== '' ? incus.location : undefined,
  });
}

/** Whether decoding refused the event. */
export function isRefusal(value: EnrichedEvent | DecodeRefusal): value is DecodeRefusal {
  return (value as DecodeRefusal).refused !== undefined;
}
