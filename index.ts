/**
 * rxfleet's public entry: the operator kit, usable in anyone's RxJS pipeline.
 * Everything exported here is documented where it is defined.
 */
export * from '@rxfleet/operators';
