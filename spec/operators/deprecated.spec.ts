import { of } from 'rxjs';
import {
  PerKeyReader,
  ReadsPerKey,
  ReadsPerKeyConfig,
  RetryLadderSchedule,
  RetrySchedule,
  RetryScheduleConfig,
  done,
  failed,
  workDone,
  workFailed,
  workerPool,
} from '@rxfleet/operators';
import { TestTicket } from '@rxfleet/operators/testing';

// The kit's old names are kept for one release: code written against them compiles and behaves as
// before, and what they make is what the new names make.

describe('the old names, kept for one release', () => {
  it('ReadsPerKey and RetrySchedule are the very classes PerKeyReader and RetryLadderSchedule', () => {
    const readsConfig: ReadsPerKeyConfig<string, string, number> = { key: (r) => r, read: () => [1], onLanded: () => undefined };
    const reads: ReadsPerKey<string, string, number> = new ReadsPerKey(readsConfig);
    const retriesConfig: RetryScheduleConfig<string> = { onDue: () => undefined };
    const retries: RetrySchedule<string> = new RetrySchedule(retriesConfig);
    expect([ReadsPerKey, RetrySchedule]).toEqual([PerKeyReader, RetryLadderSchedule]);
    expect([reads instanceof PerKeyReader, retries instanceof RetryLadderSchedule]).toEqual([true, true]);
    expect([new PerKeyReader(readsConfig) instanceof ReadsPerKey, new RetryLadderSchedule(retriesConfig) instanceof RetrySchedule]).toEqual(
      [true, true],
    );
  });

  it('done and failed build what workDone and workFailed build, and the pool takes them alike', () => {
    const error = new Error('no');
    expect([done(1), done(2, { freeAfter: 5 }), failed(error)]).toEqual([workDone(1), workDone(2, { freeAfter: 5 }), workFailed(error)]);
    expect(() => done(1, { freeAfter: -1 })).toThrow(RangeError);
    const outcomes: string[] = [];
    of(new TestTicket('a'), new TestTicket('b'))
      .pipe(workerPool({ concurrency: 1, work: (t) => [t.name === 'a' ? done(1) : failed(error)] }))
      .subscribe(({ ticket, outcome }) => outcomes.push(`${ticket.name}:${outcome.status}`));
    expect(outcomes).toEqual(['a:done', 'b:failed']);
  });
});
