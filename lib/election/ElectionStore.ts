import { ObservableInput } from 'rxjs';

/**
 * The three operations an election needs of its key-value bucket, and nothing more: the Choria
 * provisioning account may only read the bucket's stream info and publish to the key's subject
 * with an expected-sequence header, so there is no get, no watch and no delete here.
 *
 * Each operation is an Observable factory so the campaign runs in virtual time against a fake.
 */
export interface ElectionStore {
  /** The bucket's TTL in milliseconds (its stream's `max_age`): how long a silent leader's key survives. */
  ttl(): ObservableInput<number>;
  /** Writes `value` only if the key holds nothing; emits the new sequence, errors if it is held. */
  create(value: string): ObservableInput<number>;
  /** Writes `value` only if nobody wrote since `lastSequence`; emits the new sequence, errors otherwise. */
  update(value: string, lastSequence: number): ObservableInput<number>;
}
