// An application that imports the kit while one of its dependencies requires it: the bundle holds
// both builds, and an error made by one is still an instance of the other's class.
import { NoOutcomeError, PausedError } from '@rxfleet/operators';
import legacy from './legacy.cjs';

console.log(
  JSON.stringify({
    twoClasses: legacy.PausedError !== PausedError,
    crossInstanceof: new legacy.PausedError() instanceof PausedError && new PausedError() instanceof legacy.PausedError,
    distinct: new legacy.NoOutcomeError() instanceof PausedError || !(new legacy.NoOutcomeError() instanceof NoOutcomeError),
  }),
);
