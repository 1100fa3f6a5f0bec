import { config } from 'rxjs';

/**
 * Fails every spec of the enclosing `describe` in which an error reached rxjs's unhandled-error
 * hook: the kit's contract is that a callback's throw errors the output, never escapes there.
 */
export function failOnUnhandledErrors(): void {
  let unhandled: unknown[] = [];
  beforeEach(() => {
    unhandled = [];
    config.onUnhandledError = (error) => unhandled.push(error);
  });
  afterEach(() => {
    config.onUnhandledError = null;
    if (unhandled.length > 0) throw new Error(`reached rxjs's onUnhandledError: ${unhandled.map(String).join('; ')}`);
  });
}
