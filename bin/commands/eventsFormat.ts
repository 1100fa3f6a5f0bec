/**
 * How `rxfleet events` prints: an event (or an instance's current record) as a JSON line, as the
 * enricher publishes it, or as a row of a table a person reads.
 */
import { EventPayload } from '../../lib/enricher/output/payload';

/** `json`: one payload per line; `table`: aligned columns with a header. */
export type EventsFormat = 'json' | 'table';

const EVENT_COLUMNS: ReadonlyArray<[string, number]> = [
  ['TIME', 24],
  ['PROJECT', 12],
  ['NAME', 18],
  ['ACTION', 19],
  ['ORIGIN', 7],
  ['STATUS', 6],
  ['SEQ', 5],
  ['STATE', 8],
  ['ADDRESSES', 0],
];

const STATE_COLUMNS: ReadonlyArray<[string, number]> = [
  ['PROJECT', 12],
  ['NAME', 18],
  ['STATE', 8],
  ['SEQ', 5],
  ['LAST', 19],
  ['SINCE', 24],
  ['ADDRESSES', 0],
];

function row(columns: ReadonlyArray<[string, number]>, cells: string[]): string {
  return cells
    .map((cell, i) => (columns[i][1] === 0 ? cell : cell.padEnd(columns[i][1])))
    .join(' ')
    .trimEnd();
}

/** The instance's global addresses, IPv4 first. */
function addresses(p: EventPayload): string {
  const nics = p.instance?.interfaces ?? [];
  return [...nics.flatMap((n) => n.ipv4), ...nics.flatMap((n) => n.ipv6)].join(',');
}

function state(p: EventPayload): string {
  if (p.action === 'instance-deleted') return 'deleted';
  if (p.status === 'failed') return 'unread';
  return p.instance?.status ?? (p.kind === 'instance' ? '-' : '');
}

const nameOf = (p: EventPayload): string => (p.old_name === undefined ? p.name : `${p.name} (was ${p.old_name})`);

/** The table's header for events, or for the fleet's state. */
export function tableHeader(kind: 'events' | 'state'): string {
  const columns = kind === 'events' ? EVENT_COLUMNS : STATE_COLUMNS;
  return row(
    columns,
    columns.map(([title]) => title),
  );
}

/** One event as printed. */
export function formatEvent(p: EventPayload, format: EventsFormat): string {
  if (format === 'json') return JSON.stringify(p);
  return row(EVENT_COLUMNS, [
    p.received,
    p.project,
    nameOf(p),
    p.action,
    p.origin,
    p.status,
    p.instance_seq === undefined ? '' : String(p.instance_seq),
    state(p),
    addresses(p),
  ]);
}

/** One instance of the fleet's state (its latest record, the sequence it is at) as printed. */
export function formatInstance(p: EventPayload, seq: number, format: EventsFormat): string {
  if (format === 'json') return JSON.stringify({ ...p, instance_seq: seq });
  return row(STATE_COLUMNS, [p.project, p.name, state(p), String(seq), p.action, p.received, addresses(p)]);
}
