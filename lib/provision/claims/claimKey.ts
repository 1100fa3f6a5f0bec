const KV_KEY = /^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$/;

/**
 * The KV key of a node's claim: its identity when that is a valid key (a host name is), otherwise
 * `=` and the identity in base64url, so any identity has exactly one key and none collide. Apart
 * from the claims bucket's port (`claimStore.ts` re-exports it) so that `rxfleet status` finds a
 * node's claim and records without loading rxjs.
 */
export function claimKey(identity: string): string {
  if (KV_KEY.test(identity) && !identity.startsWith('=')) return identity;
  return `=${Buffer.from(identity, 'utf8').toString('base64url')}`;
}
