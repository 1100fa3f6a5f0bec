/**
 * The README's samples, as the packed-tarball spec compiles them: every ```ts and ```cjs block,
 * each a module of its own, as written. What they talk about (a logger, a gauge, an Incus client,
 * the streams a daemon has) is declared in `samplesWorld`, so the check is of the kit's types and
 * of the samples' use of them, nothing else.
 */

/** Each sample's code, with the extension it compiles as (`mts` for `ts`; `cjs`, type-checked as JavaScript, for `cjs`). */
export function extractSamples(readme: string): Array<{ code: string; extension: 'mts' | 'cjs' }> {
  return [...readme.matchAll(/^```(ts|cjs)\n([\s\S]*?)^```$/gm)].map((m) => ({ code: m[2], extension: m[1] === 'ts' ? 'mts' : 'cjs' }));
}

/** The world the samples talk about: global declarations, types only. */
export const samplesWorld = `
type Observable<T> = import('rxjs').Observable<T>;
interface Sighting { id: string }
interface InstanceEvent { project: string; name?: string; action: string; error?: string; dropped?: string }
declare const gauges: { set(held: number, queued: number): void };
declare const discovered$: Observable<Sighting>;
declare const startupEvents$: Observable<Sighting>;
declare const leadershipLost$: Observable<unknown>;
declare const log: { info(line: string): void };
declare function work(ticket: import('@rxfleet/operators').Ticket<Sighting, string>): void;
declare const sightings$: Observable<Sighting>;
declare const droppedWhilePaused: { inc(): void };
declare const url: string;
declare const tickets$: Observable<import('@rxfleet/operators').Ticket<Sighting>>;
declare function provision(node: Sighting, signal: AbortSignal): Promise<boolean>;
declare const busyWorkers: { set(busy: number): void };
declare const events$: Observable<InstanceEvent>;
declare const incus: { getInstance(project: string, name: string | undefined, options: { signal: AbortSignal }): Promise<{ name: string }> };
declare const deletedKeys$: Observable<string>;
declare function settle(event: InstanceEvent, result: unknown): void;
declare function read(name: string): Promise<void>;
declare const pendingGauge: { set(pending: number): void };
declare function listInstanceNames(): Promise<string[]>;
declare const reconnected$: Observable<unknown>;
declare const replies$: Observable<{ sender: string }>;
declare function provisionNode(identity: string): void;
declare const chunks$: Observable<Uint8Array>;
declare function handle(message: unknown): void;
declare const child: { stdout: { on(event: 'data', listener: (chunk: Uint8Array) => void): void }; kill(): void };
`;
