/**
 * Waits until `condition()` holds, checking every 20 ms, for integration specs that wait on a real
 * server or process. Rejects with `what` after `timeoutMs`; it asserts an outcome, not a duration.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
