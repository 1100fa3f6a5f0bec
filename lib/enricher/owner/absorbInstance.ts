/**
 * One instance read absorbed in one place, whoever asked for it (an event, a round's name, a
 * repair): what the answer means for the model and what the instance is owed next are decided
 * together, so two paths can never come to different conclusions about the same answer.
 */
import { awaitingAddress, distillInstance, isIncomplete, NetworkLookup } from '../model/distillInstance';
import { isNotFound } from '../reads/observableReader';
import { InstanceRecord } from '../model/records';
import { Stamped } from '../reads/readRequests';
import { InstanceResult } from './requests';
import { InstanceAnswer } from '../reads/readInstance';

/** What an instance read comes to. */
export type Absorbed =
  /** The read failed (or was cancelled): its events fail; a repair is owed. */
  | { readonly kind: 'failed'; readonly error?: unknown }
  /**
   * Incus says it does not exist. It stays in the model: its delete event, or the round's prune if
   * that was lost, removes it and announces it exactly once. Its events go out bare.
   */
  | { readonly kind: 'gone' }
  /**
   * A NIC sits on a network the model does not hold: what could be placed is a subset of where the
   * instance sits, and storing it would make that permanent (the change that would fix it is not
   * an instance event). The events fail, the wire is read, a repair is owed.
   */
  | { readonly kind: 'incomplete'; readonly network: string }
  /** The instance filter does not serve it: it leaves the model, and its events go out bare. */
  | { readonly kind: 'unserved' }
  /**
   * The record to store and send. `awaitingAddress`: it runs with a NIC and no address yet (a lease
   * a moment late, or one that never comes): nothing but another read will notice the lease, since
   * it writes only `volatile.*`, so a repair is owed, backing off (E11).
   */
  | { readonly kind: 'stored'; readonly record: InstanceRecord; readonly readAt: number; readonly awaitingAddress: boolean };

/** What distilling needs. */
export interface AbsorbOptions {
  readonly lookup: NetworkLookup;
  readonly configExclude: readonly string[];
}

/** What the answer to an instance read means, without changing anything. */
export function absorbInstance(result: InstanceResult, options: AbsorbOptions): Absorbed {
  if (result.status === 'cancelled') return { kind: 'failed' };
  if (result.status === 'failed') return isNotFound(result.error) ? { kind: 'gone' } : { kind: 'failed', error: result.error };
  const { answer, readAt } = result.value as Stamped<InstanceAnswer>;
  if (answer.served === false) return { kind: 'unserved' };
  const { instance, state } = answer;
  const distilled = distillInstance(instance, state, options.lookup, { configExclude: options.configExclude });
  if (isIncomplete(distilled)) return { kind: 'incomplete', network: distilled.network };
  return { kind: 'stored', record: distilled, readAt, awaitingAddress: awaitingAddress(instance, state, distilled) };
}
