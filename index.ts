/**
 * rxfleet's programmatic entry: the operator kit, re-exported as it is from `@rxfleet/operators`
 * (its main entry, every name documented where it is defined), so that code that imports the
 * operators from 'rxfleet' keeps working. New code should depend on `@rxfleet/operators` itself:
 * it installs with rxjs as its only peer, without the daemons' dependencies.
 */
export * from '@rxfleet/operators';
