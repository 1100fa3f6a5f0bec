/**
 * `@rxfleet/operators`: generic RxJS 7 operators for fleet automation. rxjs is the only peer and
 * nothing else runs; every export is documented where it is defined.
 *
 * One operator per job, and beside it, where an owner must drive the job from its own callbacks
 * rather than from a stream, its core: a class, as rxjs keeps `Subject` beside `share`. The README's
 * "Which one" table says which to reach for.
 *
 * The surface is listed by name, values apart from types, so that nothing becomes public by
 * accident: a file's helpers stay internal unless they are named here. Test helpers are in the
 * `@rxfleet/operators/testing` entry, never in this one.
 *
 * @packageDocumentation
 */

// The operators, one per job (and the Observable factories).
export { admit } from './admit';
export { pauseWhen } from './pauseWhen';
export { workerPool } from './workerPool';
export { withSlot } from './withSlot';
export { readPerKey } from './readPerKey';
export { releaseInOrder } from './releaseInOrder';
export { debounceByKey } from './debounceByKey';
export { retryLadder } from './retryLadder';
export { collectUntilIdle } from './collectUntilIdle';
export { splitLines } from './splitLines';
export { pacedSweep } from './pacedSweep';
export { fromAbortable } from './fromAbortable';

// What the operators take and give.
export { done, failed } from './outcomes';
export { TRASH } from './internal/Line';

// The cores: the state behind an operator, for an owner that drives it from its own callbacks (a
// ledger shared with gauges, reads asked for by what earlier reads found, a gate a retry loop
// checks), used through this entry like everything else.
export { AdmissionLedger, Ticket } from './AdmissionLedger';
export { PauseGate } from './PauseGate';
export { SlotPool } from './SlotPool';
export { ReadsPerKey } from './ReadsPerKey';
export { OrderedLine } from './OrderedLine';
export { RetrySchedule } from './RetrySchedule';
export { LineSplitter } from './LineSplitter';
export { RingQueue } from './RingQueue';

// Errors the kit raises itself.
export { OperatorKitError, NoOutcomeError, NoAnswerError, UnsubscribedError, PausedError, LineTooLongError } from './errors';

export type { AdmitConfig } from './admit';
export type { AdmissionLedgerConfig, Admission, Admitted, Refusal, RefusalReason, LedgerSizes, TicketState } from './AdmissionLedger';
export type { PauseWhenConfig } from './pauseWhen';
export type { WorkerPoolConfig } from './workerPool';
export type { PoolTicket, Outcome, Done, Failed, Skipped, PoolResult } from './outcomes';
export type { SlotClaim } from './SlotPool';
export type { ReadPerKeyConfig } from './readPerKey';
export type { ReadsPerKeyConfig, ReadResult, ReadAnswered, ReadFailed, ReadCancelled, ReadLanded } from './ReadsPerKey';
export type { ReleaseInOrderConfig, Settling, SettledAnswer } from './releaseInOrder';
export type { Trash, PlaceState } from './internal/Line';
export type { Place } from './OrderedLine';
export type { DebounceByKeyConfig } from './debounceByKey';
export type { RetryLadderConfig, Attempt } from './retryLadder';
export type { RetryScheduleConfig } from './RetrySchedule';
export type { CollectUntilIdleConfig } from './collectUntilIdle';
export type { SplitLinesConfig } from './splitLines';
export type { ChunkLines } from './LineSplitter';
export type { PacedSweepConfig, SweepEvent, Listing } from './pacedSweep';
export type { FromAbortableOptions } from './fromAbortable';
