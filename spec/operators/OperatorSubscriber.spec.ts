import { Observable, Subscription, from } from 'rxjs';
import { OperatorSubscriber, subscribeInner, subscribeWith } from '../../operators/internal/OperatorSubscriber';

// The kit's internal subscriber, on its own: what every operator's guarantees rest on.

/** An output that records what reached it. */
function output(): { error: (e: unknown) => void; complete: () => void; seen: string[] } {
  const seen: string[] = [];
  return { seen, error: (e) => seen.push(`error:${(e as Error).message}`), complete: () => seen.push('complete') };
}

class Recording extends OperatorSubscriber<number> {
  readonly values: number[] = [];
  protected onNext(value: number): void {
    if (value < 0) throw new Error(`bad ${value}`);
    this.values.push(value);
  }
}

describe('OperatorSubscriber (internal)', () => {
  it("routes a handler's throw to the output, and passes error and completion on by default", () => {
    const out = output();
    const subscriber = new Recording(out);
    subscriber.next(1);
    subscriber.next(-1);
    subscriber.complete();
    expect(subscriber.values).toEqual([1]);
    expect(out.seen).toEqual(['error:bad -1', 'complete']);
  });

  it('ignores everything after error, completion or unsubscription, and unsubscribes itself when it ends', () => {
    const out = output();
    const ended = new Recording(out);
    let torn = 0;
    ended.add(() => torn++);
    ended.error(new Error('first'));
    ended.next(2);
    ended.complete();
    ended.error(new Error('second'));
    expect(out.seen).toEqual(['error:first']);
    expect([ended.closed, torn]).toEqual([true, 1]);

    const dropped = new Recording(out);
    dropped.unsubscribe();
    dropped.next(3);
    expect(dropped.values).toEqual([]);
  });

  it('is handed to the producer as it is: no wrapper, and `closed` stops a synchronous producer', () => {
    const out = output();
    const subscriber = new Recording(out);
    let handed: unknown;
    new Observable<number>((s) => {
      handed = s;
    }).subscribe(subscriber);
    expect(handed).toBe(subscriber);

    const owner = new Subscription();
    const seen: number[] = [];
    subscribeWith(
      Object.assign(new Subscription(), out),
      from([1, 2, 3, 4]),
      {
        next: (v) => {
          seen.push(v);
          if (v === 2) owner.unsubscribe();
        },
      },
      owner,
    );
    expect(seen).toEqual([1, 2]);
  });

  it('turns an input that is not an ObservableInput into an error of the subscriber, not a throw', () => {
    const out = output();
    subscribeInner(undefined as unknown as number[], new Recording(out));
    expect(out.seen).toEqual([expect.stringMatching(/^error:/)]);
  });
});
