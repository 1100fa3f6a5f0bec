import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { workDone, workFailed } from '@rxfleet/operators';
import {
  ClaimEffect,
  ClaimEvent,
  ClaimInput,
  ClaimLease,
  ClaimMemory,
  ClaimPhase,
  ClaimRules,
  ClaimState,
  ClaimStep,
  ClaimTimer,
  ClaimWrite,
  IDLE_CLAIM,
  stepClaim,
} from '../../../../lib/provision/claims/claimMachine';
import { ClaimHeldError, ClaimStoreClosedError } from '../../../../lib/provision/claims/claimStore';
import { CycleOutcome } from '../../../../lib/provision/cycle/cycleResult';
import { CycleError } from '../../../../lib/provision/cycle/provisionCycle';
import { NoRespondersError } from '../../../../lib/choria/errors';

// The claim's table in docs/provisioner/high-availability.md is this spec's rendering of
// stepClaim over the samples below: run with CLAIM_TABLE=write to write it there after a change.
const DOC = resolve(__dirname, '../../../../docs/provisioner/high-availability.md');
const BEGIN = '<!-- the claim machine: rendered by spec/lib/provision/claims/claimMachine.table.spec.ts -->';
const END = '<!-- end of the claim machine -->';

// The sighting was admitted at 90 and claims live 30: it is stale after 120. Writes are sent at 100
// and answered at 101.
const RULES: ClaimRules = { identity: 'n1', admittedAt: 90, ttlMs: 30, refreshMs: 10, retryMs: 3, rerunMs: 5 };
const SENT = 100;
const AT = 101;
const STALE_AT = 121;

const memory = (m: Partial<ClaimMemory> = {}): ClaimMemory => ({ failures: 0, mayHaveCreated: false, keptSince: undefined, ...m });
const NOT_KEPT = memory();
const KEPT_LATELY = memory({ keptSince: AT - 10 });
const KEPT_LONG_AGO = memory({ keptSince: AT - 30 });
const lease = (refreshing = false): ClaimLease => ({ revision: 7, lastSentAt: SENT - 10, refreshSentAt: refreshing ? SENT : undefined });
const running = (m = NOT_KEPT, refreshing = false): ClaimState => ({ phase: 'running', memory: m, lease: lease(refreshing) });
const rerunning = (m = KEPT_LATELY, refreshing = false): ClaimState => ({ phase: 'waitingToRerun', memory: m, lease: lease(refreshing) });
const releasing: ClaimState = { phase: 'releasing', release: { revision: 7, until: SENT + 30, failures: 0 } };

const timeout = new Error('timeout');
const mayBeConfigured = new CycleError('n1', 'configure', 'configuration failed: nothing is listening for n1', {
  nodeMayBeConfigured: true,
});
const unanswered = new CycleError('n1', 'jwt', 'could not fetch and validate JWT', {
  cause: new NoRespondersError('choria_provision#jwt', 'n1'),
});
const answered = new CycleError('n1', 'defer', 'configuration defered: later');
const ended = (outcome: CycleOutcome): ClaimInput => ({ type: 'cycleEnded', outcome });
const written = (write: ClaimWrite): ClaimInput => ({ type: 'written', write, revision: 8 });
const refused = (write: ClaimWrite): ClaimInput => ({ type: 'refused', write, error: new ClaimHeldError('n1') });
const failed = (write: ClaimWrite, error: unknown = timeout): ClaimInput => ({ type: 'failed', write, error });
const due = (timer: ClaimTimer): ClaimInput => ({ type: 'due', timer });

/** One row of the table: a state, an event, and when (the condition this sample stands for). */
interface Sample {
  state: ClaimState;
  input: ClaimInput;
  /** The event's name in the table, when the generic one says too little. */
  event?: string;
  when?: string;
  at?: number;
}

const FRESH = 'the sighting is younger than a claim lives';
const STALE = 'the sighting is older than a claim lives';

/** Every row of the table, in its order. */
const SAMPLES: Sample[] = [
  { state: IDLE_CLAIM, input: { type: 'subscribed' }, when: FRESH },
  { state: IDLE_CLAIM, input: { type: 'subscribed' }, when: STALE, at: STALE_AT },

  { state: { phase: 'claiming', memory: NOT_KEPT, sentAt: SENT }, input: written('create') },
  { state: { phase: 'claiming', memory: NOT_KEPT, sentAt: SENT }, input: refused('create') },
  { state: { phase: 'claiming', memory: NOT_KEPT, sentAt: SENT }, input: failed('create') },
  { state: { phase: 'claiming', memory: NOT_KEPT, sentAt: SENT }, input: { type: 'unsubscribed' } },

  { state: { phase: 'waitingToClaim', memory: memory({ mayHaveCreated: true }) }, input: due('retry'), when: FRESH },
  { state: { phase: 'waitingToClaim', memory: memory({ mayHaveCreated: true }) }, input: due('retry'), when: STALE, at: STALE_AT },
  { state: { phase: 'waitingToClaim', memory: memory({ mayHaveCreated: true }) }, input: { type: 'unsubscribed' } },

  ...[running(), rerunning()].flatMap((state): Sample[] => [
    { state, input: due('refresh'), when: 'no refresh in flight' },
    { state: { ...state, lease: lease(true) } as ClaimState, input: due('refresh'), when: 'a refresh in flight' },
    { state, input: due('retry'), when: 'no refresh in flight' },
    { state: { ...state, lease: lease(true) } as ClaimState, input: due('retry'), when: 'a refresh in flight' },
    { state: { ...state, lease: lease(true) } as ClaimState, input: written('refresh') },
    { state: { ...state, lease: lease(true) } as ClaimState, input: refused('refresh') },
    { state: { ...state, lease: lease(true) } as ClaimState, input: failed('refresh') },
    { state, input: due('deadline'), when: FRESH, at: RULES.admittedAt + RULES.ttlMs },
    { state, input: due('deadline'), when: STALE, at: STALE_AT },
  ]),

  { state: running(), input: ended(workDone('provisioned')), event: 'cycle ended: provisioned or shutdown' },
  { state: running(), input: ended(workDone('upgraded')), event: 'cycle ended: upgraded or locked', when: 'not kept' },
  { state: running(KEPT_LATELY), input: ended(workDone('upgraded')), event: 'cycle ended: upgraded or locked', when: 'kept' },
  { state: running(), input: ended(workFailed(mayBeConfigured)), event: 'cycle failed: the node may be configured', when: 'not kept' },
  {
    state: running(KEPT_LATELY),
    input: ended(workFailed(unanswered)),
    event: 'cycle failed: the node may be configured or did not answer',
    when: 'kept for less than a lifetime',
  },
  {
    state: running(KEPT_LONG_AGO),
    input: ended(workFailed(unanswered)),
    event: 'cycle failed: the node may be configured or did not answer',
    when: 'kept for a lifetime or longer',
  },
  { state: running(), input: ended(workFailed(unanswered)), event: 'cycle failed: the node did not answer', when: 'not kept' },
  { state: running(), input: ended(workFailed(answered)), event: 'cycle failed: the node answered', when: 'not kept' },
  { state: running(KEPT_LATELY), input: ended(workFailed(answered)), event: 'cycle failed: the node answered', when: 'kept' },
  {
    state: running(),
    input: { type: 'cycleErrored', error: mayBeConfigured },
    event: 'cycle errored: the node may be configured',
    when: 'not kept',
  },
  { state: running(), input: { type: 'cycleErrored', error: answered }, event: 'cycle errored: the node answered', when: 'not kept' },
  {
    state: running(KEPT_LATELY),
    input: { type: 'cycleErrored', error: answered },
    event: 'cycle errored: the node answered',
    when: 'kept',
  },
  { state: running(), input: { type: 'cycleCompleted' }, event: 'cycle completed without an outcome', when: 'not kept' },
  { state: running(KEPT_LATELY), input: { type: 'cycleCompleted' }, event: 'cycle completed without an outcome', when: 'kept' },
  { state: running(), input: { type: 'unsubscribed' }, when: 'not kept' },
  { state: running(KEPT_LATELY), input: { type: 'unsubscribed' }, when: 'kept' },
  { state: rerunning(), input: due('rerun') },
  { state: rerunning(), input: { type: 'unsubscribed' }, when: 'kept' },

  { state: { phase: 'writingLast' }, input: written('last') },
  { state: { phase: 'writingLast' }, input: refused('last') },
  { state: { phase: 'writingLast' }, input: failed('last') },

  { state: releasing, input: written('release') },
  { state: releasing, input: failed('release'), when: 'a retry would come before the claim ages out' },
  { state: releasing, input: failed('release'), when: 'the claim ages out before a retry', at: SENT + 30 - RULES.retryMs },
  { state: releasing, input: failed('release', new ClaimStoreClosedError('n1')), when: 'the store is closed (a daemon stopping)' },
  { state: releasing, input: refused('release'), when: 'as failed' },
  { state: { phase: 'waitingToRelease', release: { revision: 7, until: SENT + 30, failures: 1 } }, input: due('retry') },
];

const WRITES: Record<ClaimWrite, string> = { create: 'create', refresh: 'refresh', last: 'last write', release: 'delete' };

function eventName(sample: Sample): string {
  const { input } = sample;
  if (sample.event !== undefined) return sample.event;
  switch (input.type) {
    case 'written':
      return `${WRITES[input.write]} acknowledged`;
    case 'refused':
      return `${WRITES[input.write]} refused (held)`;
    case 'failed':
      return `${WRITES[input.write]} failed`;
    case 'due':
      return `${input.timer} due`;
    default:
      return input.type;
  }
}

const outcomeName = (outcome: CycleOutcome): string =>
  outcome.status === 'done' ? outcome.value : `failed (${outcome.error instanceof CycleError ? outcome.error.step : 'error'})`;

function effectName(effect: ClaimEffect, input: ClaimInput): string {
  switch (effect.kind) {
    case 'write':
      if (effect.write === 'create') return effect.adopt ? 'create (or adopt)' : 'create';
      return effect.write === 'refresh' ? 'refresh' : effect.write === 'last' ? 'write last' : 'delete';
    case 'arm':
    case 'disarm':
      return `${effect.kind} ${effect.timer}`;
    case 'runCycle':
      return 'run the cycle';
    case 'stopCycle':
      return 'stop the cycle';
    case 'stop':
      return 'stop all';
    case 'letGo':
      return 'let go';
    case 'lapsed':
    case 'kept':
      return effect.kind;
    case 'failed':
      return `failed ${effect.operation}`;
    case 'finish':
      if (effect.outcome === undefined) return 'complete';
      return `emit ${input.type === 'cycleEnded' && effect.outcome === input.outcome ? 'its outcome' : outcomeName(effect.outcome)}, complete`;
    case 'fail':
      return 'error with its error';
    default:
      return effect.kind;
  }
}

const step = (sample: Sample): ClaimStep => stepClaim(RULES, sample.state, { ...sample.input, at: sample.at ?? AT } as ClaimEvent);

/** The table's rows, those alike but for their state merged into one. */
function rows(): string[][] {
  const out: string[][] = [];
  for (const sample of SAMPLES) {
    const { state, effects } = step(sample);
    const next = state.phase === sample.state.phase ? 'same' : state.phase;
    const row = [
      sample.state.phase,
      eventName(sample),
      sample.when ?? '',
      next,
      effects.map((e) => effectName(e, sample.input)).join(', ') || '(nothing)',
    ];
    const alike = out.find((r) => r.slice(1).join('|') === row.slice(1).join('|'));
    if (alike !== undefined) alike[0] = `${alike[0]}, ${row[0]}`;
    else out.push(row);
  }
  return out;
}

function table(): string {
  const code = (cell: string, i: number): string => ((i === 0 || i === 3) && cell !== 'same' ? `\`${cell}\`` : cell);
  const cells = rows().map((row) => `| ${row.map(code).join(' | ')} |`);
  return ['| state | event | when | next | effects, in order |', '|---|---|---|---|---|', ...cells].join('\n');
}

/** A state for each phase, and one event of each kind: together every (phase, event) there is. */
const PHASES: ClaimState[] = [
  IDLE_CLAIM,
  { phase: 'claiming', memory: NOT_KEPT, sentAt: SENT },
  { phase: 'waitingToClaim', memory: NOT_KEPT },
  running(),
  running(NOT_KEPT, true),
  rerunning(),
  rerunning(KEPT_LATELY, true),
  { phase: 'writingLast' },
  releasing,
  { phase: 'waitingToRelease', release: { revision: 7, until: SENT + 30, failures: 1 } },
  { phase: 'done' },
];
const WRITE_NAMES: ClaimWrite[] = ['create', 'refresh', 'last', 'release'];
const TIMERS: ClaimTimer[] = ['refresh', 'retry', 'deadline', 'rerun'];
const INPUTS: ClaimInput[] = [
  { type: 'subscribed' },
  { type: 'unsubscribed' },
  ...WRITE_NAMES.flatMap((w) => [written(w), refused(w), failed(w)]),
  ...TIMERS.map(due),
  ended(workDone('upgraded')),
  { type: 'cycleErrored', error: answered },
  { type: 'cycleCompleted' },
];
const kindOf = (phase: ClaimPhase, input: ClaimInput): string =>
  `${phase} ${input.type}${'write' in input ? ` ${input.write}` : ''}${input.type === 'due' ? ` ${input.timer}` : ''}`;

describe('the claim machine, as docs/provisioner/high-availability.md tables it', () => {
  it("the doc's table is the machine's (CLAIM_TABLE=write rewrites it)", () => {
    const doc = readFileSync(DOC, 'utf8');
    const begin = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect([begin >= 0, end > begin]).toEqual([true, true]);
    const rendered = `${BEGIN}\n${table()}\n${END}`;
    if (process.env.CLAIM_TABLE === 'write') writeFileSync(DOC, doc.slice(0, begin) + rendered + doc.slice(end + END.length));
    expect(doc.slice(begin, end + END.length)).toBe(rendered);
  });

  it('every event a state reacts to has a row; every other leaves the state as it is and does nothing', () => {
    const tabled = new Set(SAMPLES.map((s) => kindOf(s.state.phase, s.input)));
    const untabled: string[] = [];
    for (const state of PHASES) {
      for (const input of INPUTS) {
        const { state: next, effects } = stepClaim(RULES, state, { ...input, at: AT } as ClaimEvent);
        const reacts = next !== state || effects.length > 0;
        if (reacts && !tabled.has(kindOf(state.phase, input))) untabled.push(kindOf(state.phase, input));
      }
    }
    expect(untabled).toEqual([]);
  });

  it('arms each timer for what the legend says: refresh every refreshMs, retry after retryMs, rerun after rerunMs, the deadline a TTL after the write was sent', () => {
    const armed = new Map<ClaimTimer, Set<number>>();
    for (const sample of SAMPLES) {
      const at = sample.at ?? AT;
      for (const effect of step(sample).effects) {
        if (effect.kind !== 'arm') continue;
        const sentAt = sample.state.phase === 'claiming' ? sample.state.sentAt : SENT;
        const expected = { refresh: RULES.refreshMs, retry: RULES.retryMs, rerun: RULES.rerunMs, deadline: sentAt + RULES.ttlMs - at }[
          effect.timer
        ];
        expect([effect.timer, effect.ms]).toEqual([effect.timer, expected]);
        armed.set(effect.timer, (armed.get(effect.timer) ?? new Set()).add(effect.ms));
      }
    }
    expect([...armed.keys()].sort()).toEqual([...TIMERS].sort());
  });

  it('is pure: a step changes nothing it is given, and the same step twice gives the same result', () => {
    const freeze = <T>(value: T): T => {
      if (typeof value === 'object' && value !== null && !(value instanceof Error)) {
        Object.values(value).forEach(freeze);
        Object.freeze(value);
      }
      return value;
    };
    for (const sample of SAMPLES) {
      freeze(sample.state);
      freeze(sample.input);
      expect(step(sample)).toEqual(step(sample));
    }
  });
});
