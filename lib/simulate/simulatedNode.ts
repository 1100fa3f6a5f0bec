import { X25519KeyPair } from '../choria/keyTransport';

/**
 * `off`: not booted yet. `provisioning`: in provisioning mode, answering discovery, rpcutil and
 * choria_provision on the `provisioning` collective. `provisioned`: restarted with a configuration
 * that leaves provisioning mode; gone from the provisioning collective. `shutdown`: stopped.
 */
export type NodeState = 'off' | 'provisioning' | 'provisioned' | 'shutdown';

/** What one simulated node received and went through: what a test asserts on. */
export interface NodeRecord {
  identity: string;
  state: NodeState;
  version: string;
  silent: boolean;
  /** Times it started (first boot and every restart). */
  boots: number;
  /** Successful `configure` calls. More than one is a duplicate provisioning. */
  configured: number;
  /** The callers (`callerid`) whose `configure` succeeded, in the order each first did. More than one: configured by two provisioners. */
  configuredBy: string[];
  /** Times it came back from a restart as a provisioned server. */
  provisioned: number;
  /** Restarts that came back still in provisioning mode (a configuration without `plugin.choria.server.provision=false`). */
  provisioningLoops: number;
  /** The last configuration map written. */
  configuration?: Record<string, string>;
  certificate?: string;
  ca?: string;
  ssldir?: string;
  /** The private key the provisioner sent, decrypted (PEM `RSA PRIVATE KEY`). */
  key?: string;
  /** Why a sent key could not be decrypted. */
  keyError?: string;
  serverJwt?: string;
  actionPolicies?: Record<string, string>;
  opaPolicies?: Record<string, string>;
  /** Hex of the ed25519 public key from the last `gen25519`. */
  ed25519PublicKey?: string;
  /** The CSR from the last `gencsr`. */
  csr?: string;
  /** Versions it was upgraded to, in order. */
  upgrades: string[];
  /** Whether a `shutdown` was requested. */
  shutdownRequested: boolean;
  /** Requests refused because another caller held the provisioning lock. */
  lockRefusals: number;
  /** Requests refused for a wrong token. */
  tokenRefusals: number;
  /** Requests answered, by `agent#action`. */
  requests: Record<string, number>;
}

/** One simulated Choria server: its live state, and its record. Owned by the fleet. */
export class SimulatedNode {
  state: NodeState = 'off';
  silent = false;
  /** A restart (or upgrade restart) has been accepted and not happened yet. */
  restartPending = false;
  /** The X25519 pair from the last `jwt` call (a server regenerates it on every call). */
  ecdh: X25519KeyPair | undefined;
  /** The provisioning lock: `<senderid>.<callerid>` of its holder, and until when (ms). */
  lock: { holder: string; until: number } | undefined;
  boots = 0;
  configured = 0;
  /** Insertion-ordered: the first caller to configure the node comes first. */
  readonly configuredBy = new Set<string>();
  provisioned = 0;
  provisioningLoops = 0;
  configuration: Record<string, string> | undefined;
  certificate: string | undefined;
  ca: string | undefined;
  ssldir: string | undefined;
  key: string | undefined;
  keyError: string | undefined;
  serverJwt: string | undefined;
  actionPolicies: Record<string, string> | undefined;
  opaPolicies: Record<string, string> | undefined;
  ed25519PublicKey: string | undefined;
  csr: string | undefined;
  readonly upgrades: string[] = [];
  shutdownRequested = false;
  lockRefusals = 0;
  tokenRefusals = 0;
  readonly requests: Record<string, number> = {};

  constructor(
    readonly identity: string,
    public version: string,
  ) {}

  /** A copy of what it went through, safe to keep. */
  record(): NodeRecord {
    const optional = <K extends keyof NodeRecord>(key: K, value: NodeRecord[K] | undefined): Partial<NodeRecord> =>
      value === undefined ? {} : { [key]: value };
    return {
      identity: this.identity,
      state: this.state,
      version: this.version,
      silent: this.silent,
      boots: this.boots,
      configured: this.configured,
      configuredBy: [...this.configuredBy],
      provisioned: this.provisioned,
      provisioningLoops: this.provisioningLoops,
      ...optional('configuration', this.configuration === undefined ? undefined : { ...this.configuration }),
      ...optional('certificate', this.certificate),
      ...optional('ca', this.ca),
      ...optional('ssldir', this.ssldir),
      ...optional('key', this.key),
      ...optional('keyError', this.keyError),
      ...optional('serverJwt', this.serverJwt),
      ...optional('actionPolicies', this.actionPolicies === undefined ? undefined : { ...this.actionPolicies }),
      ...optional('opaPolicies', this.opaPolicies === undefined ? undefined : { ...this.opaPolicies }),
      ...optional('ed25519PublicKey', this.ed25519PublicKey),
      ...optional('csr', this.csr),
      upgrades: [...this.upgrades],
      shutdownRequested: this.shutdownRequested,
      lockRefusals: this.lockRefusals,
      tokenRefusals: this.tokenRefusals,
      requests: { ...this.requests },
    };
  }
}
