import { formatGoDuration } from '../../duration';
import type { CycleRecord } from '../records/cycleRecord';
import type { NodeCount } from '../records/instanceRecord';
import type { ClaimEntry, FleetStatus } from './fleetStatus';

/** A duration for people: whole seconds past ten seconds, milliseconds below one. */
export function humanDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 10_000) return formatGoDuration(Math.round(ms / 100) * 100);
  return formatGoDuration(Math.round(ms / 1000) * 1000);
}

/** Rows as columns padded to their widest cell; the last column is not padded. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd(),
  );
}

function count(c: NodeCount | undefined): string {
  return c === undefined ? '-' : String(c.count);
}

function oldest(c: NodeCount, now: number): string {
  return c.oldest === undefined ? '' : `${c.oldest.node} for ${humanDuration(now - Date.parse(c.oldest.since))}`;
}

/** `rxfleet status` as a table: the instances, then the nodes waiting, in flight and failing. */
export function statusLines(status: FleetStatus): string[] {
  const now = Date.parse(status.at);
  const lines: string[] = [];
  const claims = status.claims !== undefined;
  lines.push(
    ...table([
      ['INSTANCE', 'ROLE', 'SEEN', 'WAITING', 'IN FLIGHT', 'FAILING', ...(claims ? ['CLAIMS'] : []), 'VERSION'],
      ...status.instances.map((i) => [
        i.instance,
        i.paused === true && i.role !== 'standby' && i.role !== 'gone' ? `${i.role} (paused)` : i.role,
        i.seenMsAgo === undefined ? 'no records' : `${humanDuration(i.seenMsAgo)} ago`,
        count(i.waiting),
        count(i.inFlight),
        count(i.failing),
        ...(claims ? [i.claims === undefined ? '-' : String(i.claims)] : []),
        i.version ?? '-',
      ]),
    ]),
  );
  if (status.instances.length === 0) lines.push('(no instance has written a record: is rxfleet.records on?)');
  lines.push('');
  const failingNext = status.failing.nextTry === undefined ? '' : `, next try ${status.failing.nextTry}`;
  lines.push(
    ...table([
      ['NODES', 'COUNT', 'LONGEST'],
      ['waiting', String(status.waiting.count), oldest(status.waiting, now)],
      ['in flight', String(status.inFlight.count), oldest(status.inFlight, now)],
      ['failing', String(status.failing.count), `${oldest(status.failing, now)}${status.failing.oldest === undefined ? '' : failingNext}`],
    ]),
  );
  const outcomes = Object.entries(status.lastOutcomes)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([outcome, n]) => `${n} ${outcome}`);
  lines.push('', `last cycle of each node recorded: ${outcomes.length === 0 ? 'none' : outcomes.join(', ')}`);
  if (status.election !== undefined)
    lines.push(
      `election: ${status.election.leader} wrote the key ${humanDuration(status.election.writtenMsAgo)} ago${status.election.expiresInMs > 0 ? '' : ' (expired: no leader)'}`,
    );
  if (status.claims !== undefined)
    lines.push(`claims: ${status.claims.held} held, each lives ${humanDuration(status.claims.ttlMs)} after its last write`);
  return lines;
}

function stepLine(step: CycleRecord['steps'][number]): string {
  const attempts = step.attempts === undefined ? '' : ` ${step.attempts} attempt${step.attempts === 1 ? '' : 's'}`;
  return `    ${step.step.padEnd(11)} ${step.outcome.padEnd(6)} ${humanDuration(step.ms).padStart(6)}${attempts}${step.error === undefined ? '' : `: ${step.error}`}`;
}

/** How a cycle ended, in one phrase: where it stopped and why. */
export function endedWith(record: CycleRecord): string {
  if (record.outcome !== 'failed') return record.outcome;
  const where = record.error?.step === undefined ? '' : ` at ${record.error.step}`;
  return `failed${where}: ${record.error?.message ?? 'unknown error'}`;
}

/**
 * `rxfleet history NODE` (and `status NODE`) as text: the node's state now (its claim, its
 * backoff), then every cycle, newest first, step by step with the reason it stopped.
 */
export function historyLines(node: string, records: readonly CycleRecord[], claim?: ClaimEntry, now = Date.now()): string[] {
  const lines: string[] = [];
  const last = records[0];
  const state =
    last === undefined
      ? 'no cycle recorded'
      : last.outcome === 'failed' && last.backoff !== undefined
        ? `failing since ${last.backoff.failingSince} (${last.backoff.failures} failure${last.backoff.failures === 1 ? '' : 's'} in a row), next try after ${last.backoff.retryAfter}`
        : `last cycle ${endedWith(last)}`;
  lines.push(`${node}: ${state}`);
  if (claim !== undefined) lines.push(`claimed by ${claim.owner}, written ${humanDuration(now - claim.at)} ago`);
  for (const r of records) {
    const took = r.ms === undefined ? '' : ` in ${humanDuration(r.ms)}`;
    const claimed = r.claim === undefined ? '' : `, claim revision ${r.claim.revision}`;
    const runs = r.runs === undefined ? '' : `, run ${r.runs}`;
    lines.push('', `${r.ended}  ${r.instance}  sighted via ${r.sighting.via}${claimed}${runs}: ${endedWith(r)}${took}`);
    for (const step of r.steps) lines.push(stepLine(step));
    if (r.decision !== undefined) {
      const d = r.decision;
      const what =
        d.kind === 'configure'
          ? `configure ${d.keys.length} key${d.keys.length === 1 ? '' : 's'}${d.certificate ? ', a certificate' : ''}${d.key ? ', a private key' : ''}${d.policies.length > 0 ? `, ${d.policies.length} polic${d.policies.length === 1 ? 'y' : 'ies'}` : ''}`
          : d.kind === 'upgrade'
            ? `upgrade to ${d.upgrade ?? '?'}`
            : d.kind;
      lines.push(`    helper decided: ${what}${d.msg === '' ? '' : ` (${JSON.stringify(d.msg)})`}`);
    }
  }
  return lines;
}
