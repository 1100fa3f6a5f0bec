// The operator kit's public surface: every operator, data structure and type, from one place.
export * from './AdmissionLedger';
export * from './admit';
export * from './pauseWhen';
export * from './PauseGate';
export * from './workerPool';
export * from './readPerKey';
export * from './RingQueue';
export * from './OrderedLine';
export * from './releaseInOrder';
export * from './debounceByKey';
export * from './retryLadder';
export * from './pacedSweep';
export * from './collectUntilIdle';
export * from './fromAbortable';
export * from './KeyedReads';
export * from './SlotPool';
export * from './RepairSchedule';
