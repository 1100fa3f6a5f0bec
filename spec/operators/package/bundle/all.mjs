// Everything imported: the whole kit.
export * from '@rxfleet/operators';
