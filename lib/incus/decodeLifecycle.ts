import { JsonBounds, parseJsonObject } from '../untrustedJson';
import { IncusLifecycleEvent } from './api';
import { parseResourceUrl } from './resourceUrl';

/** What one websocket frame turned out to be. */
export type LifecycleDecoding =
  /** A lifecycle event, in either server's shape. */
  | { kind: 'event'; event: IncusLifecycleEvent }
  /** Well-formed, but nothing for us: another event type, or a lifecycle event with no action. */
  | { kind: 'ignored'; reason: string }
  /** Not what a server sends: not JSON, not an object, or a core field of the wrong type. */
  | { kind: 'malformed'; reason: string };

/** The project a resource belongs to when the server names none, as the REST API assumes. */
const DEFAULT_PROJECT = 'default';

/** The first few characters of a bad frame, for a reason a human can match to the frame. */
const EXCERPT = 120;

/**
 * A lifecycle frame is an envelope, its metadata, a context map and a requestor: a handful of
 * objects, four deep. Frames nested deeper or holding more are refused before they are built
 * (`lib/untrustedJson.ts`), far beyond anything a server sends and far below what makes parsing
 * slow. Their size is bounded by the socket (`maxFrameBytes`).
 */
export const FRAME_BOUNDS: JsonBounds = { maxDepth: 32, maxContainers: 1024 };

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function excerpt(frame: string): string {
  // Cut before flattening: a refusal costs the excerpt, never a pass over a large frame.
  const flat = frame
    .slice(0, EXCERPT * 4)
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > EXCERPT || frame.length > EXCERPT * 4 ? `${flat.slice(0, EXCERPT)}...` : flat;
}

/** A present field that is not a string is a malformed frame; an absent one is `undefined`. */
function optionalString(holder: Json, field: string, where: string): string | undefined | { bad: string } {
  const value = holder[field];
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : { bad: `${where}.${field} is ${typeof value}, not a string` };
}

/**
 * Decodes one frame of the events websocket into a lifecycle event, in the shape of either server
 * (DECISIONS E9):
 *
 * - LXD 5.0 names the project only on the envelope (`"project":"p2"`), gives no `metadata.name`,
 *   and appends `?project=p2` to `metadata.source` outside the default project.
 * - Newer Incus also fills `metadata.project` and `metadata.name`.
 *
 * The name is `metadata.name`, else the last path segment of `source` (percent-decoded, without the
 * query). The project is `metadata.project`, else the envelope's `project`, else the source's
 * `?project=`, else, for a project's own event, the project itself, else `default` (what the REST
 * API means when no project is given). A rename's old name is `context.old_name`.
 *
 * Guarantees: never throws, whatever the input. A frame that cannot be an object within
 * {@link FRAME_BOUNDS} is refused before it is parsed. Frames of another `type` and lifecycle frames with
 * an empty or absent action are `ignored` (a server may send them; they say nothing we use). A frame
 * that is not a JSON object, has no `type`, or whose `type`, `metadata`, `action`, `source`, `name` or `project`
 * has the wrong type, or that names neither a source nor a name, is `malformed`, with a reason that
 * quotes the start of the frame. Optional extras (`timestamp`, `location`, `context`) of the wrong
 * type are left out rather than costing the event. `received` time is not taken here: the decoder
 * is pure.
 */
export function decodeLifecycle(frame: string): LifecycleDecoding {
  const malformed = (why: string): LifecycleDecoding => ({ kind: 'malformed', reason: `${why}: ${excerpt(frame)}` });
  const read = parseJsonObject(frame, FRAME_BOUNDS);
  if (!read.ok)
    return malformed(
      read.refusal.kind === 'not_json' ? 'not JSON' : read.refusal.kind === 'not_object' ? 'not a JSON object' : read.refusal.message,
    );
  const parsed = read.value;
  const type = optionalString(parsed, 'type', 'frame');
  if (typeof type === 'object') return malformed(type.bad);
  if (type === undefined) return malformed('no event type');
  if (type !== 'lifecycle') return { kind: 'ignored', reason: `event type ${JSON.stringify(type)}` };

  const metadata = parsed.metadata;
  if (!isObject(metadata)) return malformed('lifecycle event without a metadata object');
  const action = optionalString(metadata, 'action', 'metadata');
  if (typeof action === 'object') return malformed(action.bad);
  if (action === undefined || action === '') return { kind: 'ignored', reason: 'lifecycle event without an action' };

  const source = optionalString(metadata, 'source', 'metadata');
  if (typeof source === 'object') return malformed(source.bad);
  const metaName = optionalString(metadata, 'name', 'metadata');
  if (typeof metaName === 'object') return malformed(metaName.bad);
  const metaProject = optionalString(metadata, 'project', 'metadata');
  if (typeof metaProject === 'object') return malformed(metaProject.bad);
  const envelopeProject = optionalString(parsed, 'project', 'frame');
  if (typeof envelopeProject === 'object') return malformed(envelopeProject.bad);

  const resource = parseResourceUrl(source ?? '');
  const name = metaName !== undefined && metaName !== '' ? metaName : resource.name;
  if (name === '') return malformed(`${action} names neither a source nor a name`);
  const ownProject =
    resource.segments[0] === '1.0' && resource.segments[1] === 'projects' && resource.segments.length === 3 ? resource.name : undefined;
  const project = [metaProject, envelopeProject, resource.project, ownProject].find((p) => p !== undefined && p !== '') ?? DEFAULT_PROJECT;

  const event: IncusLifecycleEvent = {
    action,
    project,
    name,
    source: source ?? '',
    timestamp: typeof parsed.timestamp === 'string' ? parsed.timestamp : '',
  };
  const context = metadata.context;
  if (isObject(context) && typeof context.old_name === 'string' && context.old_name !== '') event.oldName = context.old_name;
  if (typeof parsed.location === 'string' && parsed.location !== '') event.location = parsed.location;
  return { kind: 'event', event };
}
