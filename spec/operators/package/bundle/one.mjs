// One operator imported: what a bundler keeps of the kit.
export { releaseInOrder } from '@rxfleet/operators';
