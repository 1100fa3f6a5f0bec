import { TestScheduler } from 'rxjs/testing';

/** A fresh TestScheduler whose frames are compared with Jest's deep equality. */
export const newScheduler = (): TestScheduler => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** The type `cold()` returns in run mode (its `subscriptions` are what `expectSubscriptions` reads). */
export type Cold<T> = ReturnType<typeof TestScheduler.prototype.createColdObservable<T>>;
