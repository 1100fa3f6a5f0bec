import { getEventListeners } from 'node:events';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { UnsubscribedError, fromAbortable } from '@rxfleet/operators';

describe('fromAbortable', () => {
  it('calls the work once per subscription, not at creation, and emits what it resolves', async () => {
    let calls = 0;
    const work$ = fromAbortable(async () => ++calls);
    expect(calls).toBe(0);
    await expect(lastValueFrom(work$.pipe(toArray()))).resolves.toEqual([1]);
    await expect(firstValueFrom(work$)).resolves.toBe(2);
  });

  it('turns a rejection into an error', async () => {
    await expect(firstValueFrom(fromAbortable(() => Promise.reject(new Error('refused'))))).rejects.toThrow('refused');
  });

  it('turns a synchronous throw into an error', async () => {
    const work$ = fromAbortable<number>(() => {
      throw new Error('bad call');
    });
    await expect(firstValueFrom(work$)).rejects.toThrow('bad call');
  });

  it('unsubscribing before it settles aborts the signal and ignores the late answer', async () => {
    let seen: AbortSignal | undefined;
    let resolve: (v: number) => void = () => undefined;
    const values: number[] = [];
    const subscription = fromAbortable(
      (signal) =>
        new Promise<number>((r) => {
          seen = signal;
          resolve = r;
        }),
    ).subscribe((v) => values.push(v));
    expect(seen?.aborted).toBe(false);
    subscription.unsubscribe();
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(UnsubscribedError);
    resolve(1);
    await new Promise((r) => setImmediate(r));
    expect(values).toEqual([]);
  });

  it('an outer signal aborts the work too', async () => {
    const outer = new AbortController();
    let seen: AbortSignal | undefined;
    const subscription = fromAbortable(
      (signal) => {
        seen = signal;
        return new Promise<never>(() => undefined);
      },
      { signal: outer.signal },
    ).subscribe({ error: () => undefined });
    outer.abort(new Error('paused'));
    expect(seen?.aborted).toBe(true);
    expect((seen?.reason as Error).message).toBe('paused');
    subscription.unsubscribe();
  });

  it('does not abort work that already settled', async () => {
    let seen: AbortSignal | undefined;
    await firstValueFrom(
      fromAbortable(async (signal) => {
        seen = signal;
        return 1;
      }),
    );
    expect(seen?.aborted).toBe(false);
  });

  it('a `work` that throws leaves no listener on the outer signal', async () => {
    const outer = new AbortController();
    const work$ = fromAbortable(
      () => {
        throw new Error('bad call');
      },
      { signal: outer.signal },
    );
    await expect(firstValueFrom(work$)).rejects.toThrow('bad call');
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
  });

  it("behaves as its doc comment's diagram says: v then completion, or, unsubscribed first, an aborted signal and no v", async () => {
    // Promises settle on microtasks, outside a TestScheduler's virtual time: the diagram's two
    // lines, in order of events rather than frames.
    const started: Array<{ signal: AbortSignal; resolve: (v: string) => void }> = [];
    const work = (signal: AbortSignal): Promise<string> => new Promise<string>((resolve) => started.push({ signal, resolve }));
    const kept: string[] = [];
    const cut: string[] = [];
    fromAbortable(work).subscribe({ next: (v) => kept.push(v), complete: () => kept.push('|') });
    const unsubscribed = fromAbortable(work).subscribe({ next: (v) => cut.push(v), complete: () => cut.push('|') });
    unsubscribed.unsubscribe();
    for (const { resolve } of started) resolve('v');
    await Promise.resolve();
    await Promise.resolve();
    expect(kept).toEqual(['v', '|']);
    expect(cut).toEqual([]);
    expect(started.map(({ signal }) => signal.aborted)).toEqual([false, true]);
    expect(started[1]?.signal.reason).toBeInstanceOf(UnsubscribedError);
  });
});
