// The same application, written as CommonJS.
const { Observable, delay, lastValueFrom, of, toArray } = require('rxjs');
const { TRASH, releaseInOrder } = require('@rxfleet/operators');

const ordered$ = of(30, 10, 0, 20).pipe(releaseInOrder((ms) => (ms === 0 ? of(TRASH) : of(`read ${ms}ms`).pipe(delay(ms)))));
lastValueFrom(ordered$.pipe(toArray())).then((out) => console.log(JSON.stringify({ sameRxjs: ordered$ instanceof Observable, out })));
