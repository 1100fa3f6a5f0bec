import { errorMessage } from '../../choria/errors';
import { CycleError, CycleStep } from './cycleError';
import { HelperResponse } from '../helper/helperResponse';

/** One step of a cycle as it went: its name, how it ended, how long it took, how many RPC attempts. */
export interface StepTrace {
  readonly step: CycleStep;
  readonly outcome: 'ok' | 'failed';
  /** On the cycle's clock, ms. */
  readonly ms: number;
  /** RPC attempts the step sent (absent for the provisioner's own steps: the helper, signing). */
  readonly attempts?: number;
  /** Why it failed, as the log line says it. */
  readonly error?: string;
}

/**
 * What the helper decided, without its secrets: the configuration's keys but none of its values,
 * the policies' file names but not their text, whether a certificate, CA or private key came
 * back, and `msg` with the site's token taken out (a helper may echo its input). Upstream logs
 * `msg`; the rest of the answer never leaves the provisioner.
 */
export interface HelperDecision {
  readonly kind: 'configure' | 'defer' | 'shutdown' | 'upgrade';
  readonly msg: string;
  /** The configuration keys, sorted. */
  readonly keys: readonly string[];
  readonly policies: readonly string[];
  readonly certificate: boolean;
  readonly ca: boolean;
  readonly key: boolean;
  /** The version asked for (features.upgrades); absent for none. */
  readonly upgrade?: string;
  /** Whether `server_claims` came back (the ed25519 flow). */
  readonly serverClaims: boolean;
}

/** The longest `msg` a decision keeps: a helper's message is a reason, not a document. */
const MAX_MESSAGE = 500;

/** Secrets shorter than this are not looked for: replacing every `t` of a message garbles it and hides nothing. */
const SHORTEST_SECRET = 4;

/** `text` with every occurrence of `secret` (the site's token) replaced by `[redacted]`. */
export function withoutSecret(text: string, secret: string): string {
  return secret.length < SHORTEST_SECRET ? text : text.split(secret).join('[redacted]');
}

/**
 * The helper's answer as a {@link HelperDecision}. `token` (the site's provisioning token) is
 * replaced wherever `msg` carries it.
 */
export function helperDecision(response: HelperResponse, token: string): HelperDecision {
  const kind = response.defer ? 'defer' : response.shutdown ? 'shutdown' : response.upgrade !== '' ? 'upgrade' : 'configure';
  let msg = withoutSecret(response.msg, token);
  if (msg.length > MAX_MESSAGE) msg = `${msg.slice(0, MAX_MESSAGE)}...`;
  return {
    kind,
    msg,
    keys: Object.keys(response.configuration).sort(),
    policies: [...Object.keys(response.actionPolicies), ...Object.keys(response.opaPolicies)].sort(),
    certificate: response.certificate !== '',
    ca: response.ca !== '',
    key: response.key !== '',
    ...(response.upgrade !== '' ? { upgrade: response.upgrade } : {}),
    serverClaims: response.serverClaims !== undefined,
  };
}

/**
 * One cycle of one node as it goes, step by step, for its record (DECISIONS P21). The cycle calls
 * {@link step} around each step and {@link decided} with the helper's answer; the RPC layer calls
 * {@link attempt} for each attempt of the step running now.
 */
export class CycleTrace {
  private readonly traced: StepTrace[] = [];
  private attempts = 0;
  private decision: HelperDecision | undefined;
  private endedAt: number | undefined;

  constructor(
    readonly identity: string,
    /** When the cycle started, on its clock. */
    readonly startedAt: number,
    private readonly clock: () => number,
    /** How many runs of this ticket's cycle this is (active-active runs a kept node's again). */
    readonly run = 1,
  ) {}

  /** The steps so far, in order. */
  get steps(): readonly StepTrace[] {
    return this.traced;
  }

  /** The helper's decision, once it answered. */
  get helper(): HelperDecision | undefined {
    return this.decision;
  }

  /** How long the cycle took, once it ended. */
  get ms(): number | undefined {
    return this.endedAt === undefined ? undefined : this.endedAt - this.startedAt;
  }

  /** Runs one step, noting how it ended and how long it took; its result or error passes through. */
  async step<T>(step: CycleStep, run: () => Promise<T>): Promise<T> {
    const started = this.clock();
    this.attempts = 0;
    try {
      const result = await run();
      this.note(step, 'ok', started);
      return result;
    } catch (error) {
      this.note(step, 'failed', started, error);
      throw error;
    }
  }

  /** An RPC attempt of the step running now. */
  attempt(): void {
    this.attempts++;
  }

  /** The helper answered. */
  decided(decision: HelperDecision): void {
    this.decision = decision;
  }

  /** The cycle ended (whatever the outcome). */
  end(): void {
    this.endedAt ??= this.clock();
  }

  private note(step: CycleStep, outcome: StepTrace['outcome'], started: number, error?: unknown): void {
    const attempts = this.attempts;
    this.traced.push({
      step,
      outcome,
      ms: this.clock() - started,
      ...(attempts > 0 ? { attempts } : {}),
      ...(error !== undefined ? { error: error instanceof CycleError ? error.message : errorMessage(error) } : {}),
    });
  }
}

/**
 * The cycles being traced and those that ended and were not yet taken, by node. One node has one
 * cycle at a time (admission holds its key), so the identity finds it. A node whose cycle runs
 * again before its record was taken (active-active's kept node) continues the same count of runs.
 */
export class CycleTraces {
  private readonly running = new Map<string, CycleTrace>();
  private readonly ended = new Map<string, CycleTrace>();

  constructor(private readonly clock: () => number) {}

  /** A new trace for the node's cycle, starting now. */
  begin(identity: string): CycleTrace {
    const earlier = this.ended.get(identity);
    this.ended.delete(identity);
    const trace = new CycleTrace(identity, this.clock(), this.clock, (earlier?.run ?? 0) + 1);
    this.running.set(identity, trace);
    return trace;
  }

  /** An RPC attempt for the node. */
  attempt(identity: string): void {
    this.running.get(identity)?.attempt();
  }

  /** The node's cycle ended: its trace waits to be taken. */
  end(trace: CycleTrace): void {
    trace.end();
    if (this.running.get(trace.identity) === trace) this.running.delete(trace.identity);
    this.ended.set(trace.identity, trace);
  }

  /** The ended trace of the node's last cycle, removed; undefined when none ran (claimed elsewhere, skipped). */
  take(identity: string): CycleTrace | undefined {
    const trace = this.ended.get(identity);
    this.ended.delete(identity);
    return trace;
  }

  /** Cycles running now, longest running first. */
  inFlight(): IterableIterator<CycleTrace> {
    return this.running.values();
  }

  /** How many cycles are running now. */
  get size(): number {
    return this.running.size;
  }
}
