// An application bundled with the kit (esbuild, for the browser and for Node): rxjs must be one copy,
// whatever build each side resolved, so the kit's Observables are the application's.
import { Observable, delay, lastValueFrom, of, toArray } from 'rxjs';
import { TRASH, releaseInOrder } from '@rxfleet/operators';

const ordered$ = of(30, 10, 0, 20).pipe(releaseInOrder((ms) => (ms === 0 ? of(TRASH) : of(`read ${ms}ms`).pipe(delay(ms)))));
lastValueFrom(ordered$.pipe(toArray())).then((out) => console.log(JSON.stringify({ sameRxjs: ordered$ instanceof Observable, out })));
