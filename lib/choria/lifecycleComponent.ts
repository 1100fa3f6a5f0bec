import { InvalidLifecycleComponentError } from './errors';

/**
 * Refuses a lifecycle component that would widen a subscription or name nothing (go-choria:
 * "invalid lifecycle component: X"). Called before subscribing, and by configuration validation.
 * Kept apart from the event parser so a command line can check it without loading the protocol.
 */
export function validateLifecycleComponent(component: string): void {
  if (!isValidLifecycleComponent(component)) throw new InvalidLifecycleComponentError(component);
}

/** The rule itself: a single NATS subject token, without wildcards or spaces. */
export function isValidLifecycleComponent(component: string): boolean {
  return component !== '' && !/[.>*\s]/.test(component);
}
