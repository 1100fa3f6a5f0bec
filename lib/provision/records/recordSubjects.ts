import { claimKey } from '../claims/claimKey';

/** The stream and subjects rxfleet's defaults give the records (`rxfleet.records_stream`, `records_subject`). */
export const DEFAULT_RECORDS_STREAM = 'RXFLEET_PROVISIONER_RECORDS';
export const DEFAULT_RECORDS_SUBJECT = 'rxfleet.provisioner.records';

/**
 * A node's or an instance's name as subject tokens: itself when it is a valid KV key (a host name
 * is: dotted tokens of letters, digits, `-`, `_`, `/`, `=`), otherwise `=` and its base64url, the
 * claims bucket's rule, so any name has exactly one subject and none holds a wildcard.
 */
export function subjectToken(name: string): string {
  return claimKey(name);
}

/** Where one node's cycle records go: `<prefix>.node.<node>`. */
export function nodeSubject(prefix: string, node: string): string {
  return `${prefix}.node.${subjectToken(node)}`;
}

/** Where one instance's own records go: `<prefix>.instance.<identity>`. */
export function instanceSubject(prefix: string, identity: string): string {
  return `${prefix}.instance.${subjectToken(identity)}`;
}

/** Every record: the instances' and the nodes'. */
export function allRecordsSubject(prefix: string): string {
  return `${prefix}.>`;
}
