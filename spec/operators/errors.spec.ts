import * as kit from '@rxfleet/operators';

type Errors = typeof kit;

/** A second copy of the kit's errors module, as a bundle holding both builds (or two installs) has. */
function anotherCopy(): Errors {
  let copy: Errors | undefined;
  jest.isolateModules(() => {
    copy = jest.requireActual<Errors>('../../operators/errors');
  });
  return copy as Errors;
}

describe("the kit's errors", () => {
  it('are instanceof their classes and the base across copies of the kit, and of nothing else', () => {
    const other = anotherCopy();
    expect(other.PausedError).not.toBe(kit.PausedError);
    const made = [
      new other.PausedError(),
      new other.NoOutcomeError(),
      new other.NoAnswerError(),
      new other.UnsubscribedError(),
      new other.LineTooLongError(1),
    ];
    const classes = [kit.PausedError, kit.NoOutcomeError, kit.NoAnswerError, kit.UnsubscribedError, kit.LineTooLongError];
    // Row i: the error made by the other copy, against each class of this copy.
    expect(made.map((error) => classes.map((c) => error instanceof c))).toEqual(classes.map((_, i) => classes.map((__, j) => i === j)));
    expect(made.every((error) => error instanceof kit.OperatorKitError && error instanceof Error)).toBe(true);
    expect(new kit.PausedError() instanceof other.PausedError).toBe(true);
    expect([null, undefined, 'PausedError', new Error('paused'), { name: 'PausedError' }].some((v) => v instanceof kit.PausedError)).toBe(
      false,
    );
  });

  it('a class of yours that extends one is judged by its prototype: a plain kit error is not an instance of it', () => {
    class ElectionLost extends kit.PausedError {}
    const other = anotherCopy();
    expect([
      new ElectionLost() instanceof ElectionLost,
      new ElectionLost() instanceof kit.PausedError,
      new ElectionLost() instanceof other.PausedError,
    ]).toEqual([true, true, true]);
    expect([new kit.PausedError() instanceof ElectionLost, new other.PausedError() instanceof ElectionLost]).toEqual([false, false]);
  });

  it('keep a stable name and the cause behind them', () => {
    const cause = new Error('socket closed');
    const error = new kit.NoAnswerError({ cause });
    expect([error.name, error.message, error.cause]).toEqual(['NoAnswerError', 'read completed without an answer', cause]);
  });
});
