export { RingQueue } from './RingQueue';
export { fromAbortable } from './fromAbortable';
