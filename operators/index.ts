/**
 * `@rxfleet/operators`: generic RxJS 7 operators for fleet automation. rxjs is the only peer and
 * nothing else runs; every export is documented where it is defined.
 *
 * The surface is listed by name, values apart from types, so that nothing becomes public by
 * accident: a file's helpers stay internal unless they are named here. Test helpers are in the
 * `@rxfleet/operators/testing` entry, never in this one.
 *
 * @packageDocumentation
 */

// Operators and Observable factories.
export { admit } from './admit';
export { pauseWhen } from './pauseWhen';
export { workerPool } from './workerPool';
export { done, failed } from './outcomes';
export { readPerKey } from './readPerKey';
export { releaseInOrder, TRASH } from './releaseInOrder';
export { debounceByKey } from './debounceByKey';
export { retryLadder } from './retryLadder';
export { pacedSweep } from './pacedSweep';
export { collectUntilIdle } from './collectUntilIdle';
export { fromAbortable } from './fromAbortable';
export { releaseSettled } from './releaseSettled';
export { withSlot } from './SlotPool';
export { splitLines } from './splitLines';

// The state behind the operators, public on purpose: a daemon builds its own pipeline from them
// (an admission ledger shared with its gauges, an ordered line owned by a model, a ring for a
// publisher's backlog), and uses them through this entry like any other user.
export { AdmissionLedger, Ticket } from './AdmissionLedger';
export { PauseGate } from './PauseGate';
export { OrderedLine } from './OrderedLine';
export { RingQueue } from './RingQueue';
export { KeyedReads } from './KeyedReads';
export { SlotPool } from './SlotPool';
export { RepairSchedule } from './RepairSchedule';
export { LineSplitter } from './LineSplitter';

// Errors the kit raises itself.
export { OperatorKitError, NoOutcomeError, NoAnswerError, UnsubscribedError, PausedError, LineTooLongError } from './errors';

export type { AdmitConfig } from './admit';
export type { AdmissionLedgerConfig, Admission, Admitted, Refusal, RefusalReason, LedgerSizes, TicketState } from './AdmissionLedger';
export type { PauseWhenConfig } from './pauseWhen';
export type { WorkerPoolConfig } from './workerPool';
export type { PoolTicket, Outcome, Done, Failed, Skipped, PoolResult } from './outcomes';
export type { ReadPerKeyConfig, ReadResult, ReadAnswered, ReadFailed, ReadCancelled, ReadLanded } from './readPerKey';
export type { ReleaseInOrderConfig } from './releaseInOrder';
export type { Place, PlaceState } from './OrderedLine';
export type { DebounceByKeyConfig } from './debounceByKey';
export type { RetryLadderConfig, RepairReport } from './retryLadder';
export type { PacedSweepConfig, SweepEvent } from './pacedSweep';
export type { CollectUntilIdleConfig } from './collectUntilIdle';
export type { FromAbortableOptions } from './fromAbortable';
export type { Settling } from './releaseSettled';
export type { KeyedReadsConfig } from './KeyedReads';
export type { SlotClaim } from './SlotPool';
export type { RepairScheduleConfig } from './RepairSchedule';
export type { SplitLinesConfig } from './splitLines';
export type { SplitLines } from './LineSplitter';
