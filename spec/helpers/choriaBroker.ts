/**
 * nats-server configuration that mirrors a Choria broker's accounts (choria-provisioner.md §7.4
 * and §8.1): the election bucket lives in the `choria` account; the `provisioning` account (where
 * provisioners and provisioning-mode servers connect) may only read the bucket's stream info and
 * publish to the election key, through imports under `choria.streams`, and otherwise use
 * `provisioning.>` and `choria.lifecycle.>` subjects. The claims bucket of active-active
 * provisioning is granted the same way (docs/provisioner/high-availability.md, "Active-active"):
 * its stream info, direct get of a key's last value, and publishing to its keys. The provisioning
 * records' stream lives there too: the provisioning account may publish to its subjects (each
 * publish acknowledged by the stream), and read nothing of it.
 */
export const CHORIA_ADMIN = { user: 'choria', password: 'choria-admin' };
export const PROVISIONER = { user: 'provisioner', password: 's3cret' };
/** A user of the provisioning account for simulated provisioning-mode servers. */
export const PROVISIONING_SERVER = { user: 'server', password: 'server-pw' };
/** The claims bucket the grant below names (rxfleet's default). */
export const CLAIMS_BUCKET = 'RXFLEET_PROVISIONER_CLAIMS';
/** The provisioning records' stream and subjects the grant below names (rxfleet's defaults). */
export const RECORDS_STREAM = 'RXFLEET_PROVISIONER_RECORDS';
export const RECORDS_SUBJECT = 'rxfleet.provisioner.records';

export const choriaAccountsConfig = `
accounts: {
  choria: {
    jetstream: enabled
    users: [ { user: ${CHORIA_ADMIN.user}, password: ${CHORIA_ADMIN.password} } ]
    exports: [
      { service: "$JS.API.STREAM.INFO.KV_CHORIA_LEADER_ELECTION" }
      { service: "$KV.CHORIA_LEADER_ELECTION.provisioner" }
      { service: "$JS.API.STREAM.INFO.KV_RXFLEET_PROVISIONER_CLAIMS" }
      { service: "$JS.API.DIRECT.GET.KV_RXFLEET_PROVISIONER_CLAIMS.>" }
      { service: "$KV.RXFLEET_PROVISIONER_CLAIMS.>" }
      { service: "rxfleet.provisioner.records.>" }
    ]
  }
  provisioning: {
    users: [
      { user: ${PROVISIONER.user}, password: ${PROVISIONER.password} }
      { user: ${PROVISIONING_SERVER.user}, password: ${PROVISIONING_SERVER.password} }
    ]
    imports: [
      { service: { account: choria, subject: "$JS.API.STREAM.INFO.KV_CHORIA_LEADER_ELECTION" }, to: "choria.streams.STREAM.INFO.KV_CHORIA_LEADER_ELECTION" }
      { service: { account: choria, subject: "$KV.CHORIA_LEADER_ELECTION.provisioner" }, to: "choria.streams.$KV.CHORIA_LEADER_ELECTION.provisioner" }
      { service: { account: choria, subject: "$JS.API.STREAM.INFO.KV_RXFLEET_PROVISIONER_CLAIMS" }, to: "choria.streams.STREAM.INFO.KV_RXFLEET_PROVISIONER_CLAIMS" }
      { service: { account: choria, subject: "$JS.API.DIRECT.GET.KV_RXFLEET_PROVISIONER_CLAIMS.>" }, to: "choria.streams.DIRECT.GET.KV_RXFLEET_PROVISIONER_CLAIMS.>" }
      { service: { account: choria, subject: "$KV.RXFLEET_PROVISIONER_CLAIMS.>" }, to: "choria.streams.$KV.RXFLEET_PROVISIONER_CLAIMS.>" }
      { service: { account: choria, subject: "rxfleet.provisioner.records.>" } }
    ]
  }
}
`;
