/**
 * `@rxfleet/operators`: generic RxJS 7 operators for fleet automation. rxjs is the only peer and
 * nothing else runs; every export is documented where it is defined.
 *
 * One operator per job, and beside it, where an owner must drive the job from its own callbacks
 * rather than from a stream, its core: a class, as rxjs keeps `Subject` beside `share`, named for
 * what the operator does and what kind of thing it is (`admit` and its `AdmissionLedger`,
 * `readPerKey` and its `PerKeyReader`, `retryLadder` and its `RetryLadderSchedule`). The README's
 * "Which one" table says which to reach for.
 *
 * The surface is listed by name, values apart from types, so that nothing becomes public by
 * accident: a file's helpers stay internal unless they are named here. Test helpers are in the
 * `@rxfleet/operators/testing` entry, never in this one.
 *
 * @packageDocumentation
 */

// The operators, one per job (and the Observable factories).
export { admit } from './admit.js';
export { pauseWhen } from './pauseWhen.js';
export { workerPool } from './workerPool.js';
export { withSlot } from './withSlot.js';
export { readPerKey } from './readPerKey.js';
export { releaseInOrder } from './releaseInOrder.js';
export { debounceByKey } from './debounceByKey.js';
export { retryLadder } from './retryLadder.js';
export { collectUntilIdle } from './collectUntilIdle.js';
export { splitLines } from './splitLines.js';
export { pacedSweep } from './pacedSweep.js';
export { fromAbortable } from './fromAbortable.js';

// What the operators take and give.
export { workDone, workFailed } from './outcomes.js';
export { valueTicket } from './valueTicket.js';
export { TRASH } from './internal/Line.js';

// The cores: the state behind an operator, for an owner that drives it from its own callbacks (a
// ledger shared with gauges, reads asked for by what earlier reads found, a gate a retry loop
// checks), used through this entry like everything else.
export { AdmissionLedger, Ticket } from './AdmissionLedger.js';
export { PauseGate } from './PauseGate.js';
export { SlotPool } from './SlotPool.js';
export { PerKeyReader } from './PerKeyReader.js';
export { OrderedLine } from './OrderedLine.js';
export { RetryLadderSchedule } from './RetryLadderSchedule.js';
export { LineSplitter } from './LineSplitter.js';
export { RingQueue } from './RingQueue.js';

// Errors the kit raises itself.
export { OperatorKitError, NoOutcomeError, NoAnswerError, UnsubscribedError, PausedError, LineTooLongError } from './errors.js';

// Old names, kept for one release (see deprecated.ts).
export { ReadsPerKey, RetrySchedule, done, failed } from './deprecated.js';

export type { AdmitConfig } from './admit.js';
export type { AdmissionLedgerConfig, Admission, Admitted, Refusal, RefusalReason, LedgerSizes, TicketState } from './AdmissionLedger.js';
export type { PauseWhenConfig } from './pauseWhen.js';
export type { WorkerPoolConfig } from './workerPool.js';
export type { PoolTicket, Outcome, Done, Failed, Skipped, PoolResult } from './outcomes.js';
export type { ValueTicket } from './valueTicket.js';
export type { SlotClaim } from './SlotPool.js';
export type { ReadPerKeyConfig } from './readPerKey.js';
export type { PerKeyReaderConfig, ReadResult, ReadAnswered, ReadFailed, ReadCancelled, ReadLanded } from './PerKeyReader.js';
export type { ReleaseInOrderConfig, Settling, SettledAnswer } from './releaseInOrder.js';
export type { Trash, PlaceState } from './internal/Line.js';
export type { Place } from './OrderedLine.js';
export type { DebounceByKeyConfig } from './debounceByKey.js';
export type { RetryLadderConfig, Attempt } from './retryLadder.js';
export type { RetryLadderScheduleConfig } from './RetryLadderSchedule.js';
export type { CollectUntilIdleConfig } from './collectUntilIdle.js';
export type { SplitLinesConfig } from './splitLines.js';
export type { ChunkLines } from './LineSplitter.js';
export type { PacedSweepConfig, SweepEvent, Listing } from './pacedSweep.js';
export type { FromAbortableOptions } from './fromAbortable.js';
export type { ReadsPerKeyConfig, RetryScheduleConfig } from './deprecated.js';
