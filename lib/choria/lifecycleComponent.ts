/**
 * A lifecycle component go-choria refuses. Defined here, with the rule, and re-exported by
 * `errors.ts`: the command line checks a component without loading the other errors (and, through
 * them, the operator kit and rxjs).
 */
export class InvalidLifecycleComponentError extends Error {
  override readonly name = 'InvalidLifecycleComponentError';
  constructor(readonly component: string) {
    super(`invalid lifecycle component: ${component}`);
  }
}

/**
 * Refuses a lifecycle component that would widen a subscription or name nothing (go-choria:
 * "invalid lifecycle component: X"). Called before subscribing, and by configuration validation.
 * Kept apart from the event parser so a command line can check it without loading the protocol.
 * Throws {@link InvalidLifecycleComponentError}.
 */
export function validateLifecycleComponent(component: string): void {
  if (!isValidLifecycleComponent(component)) throw new InvalidLifecycleComponentError(component);
}

/** The rule itself: a single NATS subject token, without wildcards or spaces. */
export function isValidLifecycleComponent(component: string): boolean {
  return component !== '' && !/[.>*\s]/.test(component);
}
