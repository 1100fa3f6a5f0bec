/**
 * `npm run bench:enrich` (second part): what instances that never get an address cost (DECISIONS
 * E11), in virtual time, so the figures are the schedule's and not the machine's. A fake Incus
 * (LATENCY_MS per call, default 1) holds ADDRESSLESS instances (default 100) that run with a NIC
 * and never get an address, each announced by an `instance-started`, and one healthy instance
 * updated every 10 s. One line of JSON per figure, each beside its baseline from the same run:
 *
 * - GETs per second spent on the addressless instances, in the first minute (their fast repairs
 *   poll for the lease) and from minute 10 to 60, against upstream's pace (a repair every 5 s,
 *   each polling for the address timeout);
 * - the delay they add to the healthy instance's events (beyond its own read), against the same
 *   events with no addressless instance.
 *
 * Environment: LATENCY_MS (default 1), ADDRESSLESS (default 100), WORKERS (default 16).
 */
import { benchOutput } from './machineLoad';
import { Registry } from 'prom-client';
import { Subject, VirtualAction, VirtualTimeScheduler } from 'rxjs';
import { IncusStreamItem } from '../lib/incus/api';
import { defaultEnricherSettings } from '../lib/enricher/config/config';
import { createEnricher } from '../lib/enricher/pipeline/createEnricher';
import { Ladder } from '../lib/enricher/owner/repairs';
import { FakeIncus } from '../spec/helpers/FakeIncus';
import { memoryColdStore } from '../spec/helpers/memoryColdStore';

const LATENCY_MS = Number(process.env.LATENCY_MS ?? 1);
const ADDRESSLESS = Number(process.env.ADDRESSLESS ?? 100);
const WORKERS = Number(process.env.WORKERS ?? 16);
const MINUTE = 60_000;

const output = benchOutput('bench/enrichAddressless.ts');
const print = (figure: Record<string, unknown>): void => output.print(figure);
const round = (n: number, digits = 3): number => +n.toFixed(digits);
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

interface Run {
  /** GETs on the addressless instances, by minute. */
  getsPerMinute: number[];
  /** Each healthy event's time out, less its arrival and its own read, with its arrival. */
  added: Array<{ at: number; ms: number }>;
}

/** The scenario for `minutes` of virtual time with `addressless` instances and the given address ladder. */
function scenario(addressless: number, minutes: number, addresses?: Ladder): Run {
  const vts = new VirtualTimeScheduler(VirtualAction, minutes * MINUTE);
  const fake = new FakeIncus({ scheduler: vts, latency: LATENCY_MS });
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/16', 'ipv6.address': 'none' } });
  fake.createInstance('default', 'h0', { network: 'br0' }).start('default', 'h0', '10.0.0.2');
  for (let i = 0; i < addressless; i++) fake.createInstance('default', `a${i}`, { network: 'br0' }).start('default', `a${i}`);
  const getsPerMinute = new Array<number>(minutes + 1).fill(0);
  fake.failWhen = (call) => {
    if (call.name?.startsWith('a') === true && (call.method === 'getInstance' || call.method === 'getInstanceState'))
      getsPerMinute[Math.floor(vts.now() / MINUTE)]++;
    return undefined;
  };
  const events = new Subject<IncusStreamItem>();
  // Warm from a store holding the bridge: no round, only what the events and repairs read.
  const store = memoryColdStore({
    version: 1,
    projects: {
      default: { config: {}, networks: { br0: { name: 'br0', project: 'default', managed: true, type: 'bridge', ipv4: '10.0.0.1/16' } } },
    },
  });
  const enricher = createEnricher({
    events$: events,
    reader: fake,
    config: defaultEnricherSettings({ storeFile: undefined, workers: WORKERS }),
    registry: new Registry(),
    scheduler: vts,
    store: store.open,
    ...(addresses !== undefined ? { repairs: { addresses } } : {}),
  });
  const sentAt = new Map<string, number>();
  const added: Run['added'] = [];
  enricher.events$.subscribe((event) => {
    if (event.name !== 'h0') return;
    const v = event.instance?.config['user.v'];
    const at = v === undefined ? undefined : sentAt.get(v);
    if (at !== undefined) added.push({ at, ms: vts.now() - at - 2 * LATENCY_MS });
  });
  vts.schedule(() => {
    for (let i = 0; i < addressless; i++) events.next(fake.event('instance-started', 'default', `a${i}`));
  }, 0);
  for (let t = 5_000, n = 0; t < minutes * MINUTE; t += 10_000, n++) {
    vts.schedule(() => {
      fake.configure('default', 'h0', { 'user.v': String(n) });
      sentAt.set(String(n), vts.now());
      events.next(fake.event('instance-updated', 'default', 'h0'));
    }, t);
  }
  vts.flush();
  return { getsPerMinute, added };
}

/** The added delays of the healthy events that arrived in [from, to) minutes, sorted. */
const delays = (run: Run, from: number, to: number): number[] =>
  run.added
    .filter((a) => a.at >= from * MINUTE && a.at < to * MINUTE)
    .map((a) => a.ms)
    .sort((a, b) => a - b);

const perSecond = (run: Run, from: number, to: number): number =>
  run.getsPerMinute.slice(from, to).reduce((a, b) => a + b, 0) / ((to - from) * 60);

function main(): void {
  print({
    bench: 'enrich, instances without an address (virtual time)',
    latency_ms_per_call: LATENCY_MS,
    addressless: ADDRESSLESS,
    workers: WORKERS,
  });
  const ours = scenario(ADDRESSLESS, 60);
  // Upstream's pace: a repair every 5 s for ever, each polling for the whole address timeout.
  const upstream = scenario(ADDRESSLESS, 10, { fast: 5000, fastAttempts: Number.MAX_SAFE_INTEGER, slow: 5000 });
  const none = scenario(0, 60);
  print({
    figure: 'GETs per second spent on instances without an address, first minute',
    addressless: ADDRESSLESS,
    gets_per_s: round(perSecond(ours, 0, 1), 1),
    per_instance: round(perSecond(ours, 0, 1) / ADDRESSLESS, 3),
    baseline: 'upstream pace (every 5 s, polling the address timeout)',
    baseline_gets_per_s: round(perSecond(upstream, 0, 1), 1),
  });
  print({
    figure: 'GETs per second spent on instances without an address, minutes 10 to 60',
    addressless: ADDRESSLESS,
    gets_per_s: round(perSecond(ours, 10, 60), 3),
    per_instance: round(perSecond(ours, 10, 60) / ADDRESSLESS, 4),
    baseline: 'upstream pace, minutes 2 to 10',
    baseline_gets_per_s: round(perSecond(upstream, 2, 10), 1),
    baseline_per_instance: round(perSecond(upstream, 2, 10) / ADDRESSLESS, 2),
  });
  // The first minute includes the starts themselves: each waits for its address up to the
  // address timeout in its place in the line, and what arrives behind them waits with them (the
  // line's documented cost). After that only the repairs run.
  for (const [from, to, when] of [
    [0, 1, 'first minute (behind the starts, while the fast repairs poll)'],
    [1, 60, 'minutes 1 to 60 (the repairs backing off)'],
  ] as const) {
    const ourDelays = delays(ours, from, to);
    const baseDelays = delays(none, from, to);
    print({
      figure: `delay added to a healthy instance's event (beyond its own read), ${when}`,
      addressless: ADDRESSLESS,
      events: ourDelays.length,
      p50_ms: percentile(ourDelays, 50),
      p99_ms: percentile(ourDelays, 99),
      max_ms: ourDelays[ourDelays.length - 1],
      baseline: 'no instance without an address',
      baseline_p50_ms: percentile(baseDelays, 50),
      baseline_max_ms: baseDelays[baseDelays.length - 1],
    });
  }
  output.end();
}

main();
