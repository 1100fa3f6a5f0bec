import { Registry } from 'prom-client';
import { Subject, config as rxjsConfig, of } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { Archive } from '../../../lib/enricher/pipeline/Archive';
import { createEnricher } from '../../../lib/enricher/pipeline/createEnricher';
import { EnrichedEvent, newEvent } from '../../../lib/enricher/model/event';
import { EnricherMetrics } from '../../../lib/enricher/metrics/metrics';
import { EnricherInput, archiveFilter, debounceSubjects } from '../../../lib/enricher/pipeline/stages';
import { WantedTable, daemonWanted } from '../../../lib/enricher/model/wanted';
import { FakeIncus } from '../../helpers/FakeIncus';
import { memoryColdStore } from '../../helpers/memoryColdStore';
import { newTs, settings, warmStore } from './harness';

// A throw in any stage is a bug: it must error the enricher's events$ (so the daemon sees it, says
// so and exits non-zero), never reach rxjs's unhandled-error path, where it would be thrown on a
// later turn with nothing to stop the daemon cleanly.
describe('a stage that throws', () => {
  let unhandled: unknown[];
  const previous = rxjsConfig.onUnhandledError;
  beforeEach(() => {
    unhandled = [];
    rxjsConfig.onUnhandledError = (error) => unhandled.push(error);
  });
  afterEach(() => {
    rxjsConfig.onUnhandledError = previous;
  });

  const world = (): FakeIncus => {
    const fake = new FakeIncus({ latency: 0 }).setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24' } });
    fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
    return fake;
  };

  const throwingWants = (): WantedTable => {
    // What the daemon wants by default (so the event is decoded), and a lookup that fails.
    const wanted = daemonWanted(settings().wants);
    wanted.get = () => {
      throw new Error('bug in a wants table');
    };
    return wanted;
  };

  it("the debounce stage's callback throwing errors its output", () => {
    const errors: unknown[] = [];
    const inputs = new Subject<EnricherInput>();
    inputs
      .pipe(
        debounceSubjects({
          window: 100,
          wanted: throwingWants(),
          metrics: new EnricherMetrics(new Registry()),
          scheduler: newTs(),
        }),
      )
      .subscribe({ error: (error: unknown) => errors.push(error) });
    // A warm chain (connected, a round ended since), where an event's action is looked up to
    // decide whether it collapses.
    inputs.next({ kind: 'connection', connected: true });
    inputs.next({ kind: 'round-end', round: 1, ok: true });
    expect(errors).toEqual([]);
    inputs.next(decoded());
    expect(errors).toEqual([new Error('bug in a wants table')]);
    expect(unhandled).toEqual([]);
  });

  it("the archive's verdict throwing errors the archive stage's output", () => {
    const archive = new Archive();
    archive.judge = () => {
      throw new Error('bug in the archive');
    };
    const errors: unknown[] = [];
    of({ event: decoded() })
      .pipe(archiveFilter(archive, new EnricherMetrics(new Registry())))
      .subscribe({ error: (error: unknown) => errors.push(error) });
    expect(errors).toEqual([new Error('bug in the archive')]);
    expect(unhandled).toEqual([]);
  });

  it('a task of the owner throwing (routing with a broken wants table) errors events$, and nothing goes out', () => {
    const fake = world();
    const events = new Subject<IncusStreamItem>();
    const enricher = createEnricher({
      events$: events,
      reader: fake,
      config: settings({ debounceWindow: 0 }),
      registry: new Registry(),
      scheduler: newTs(),
      store: memoryColdStore(warmStore()).open,
      wanted: throwingWants(),
    });
    const out: string[] = [];
    const errors: unknown[] = [];
    enricher.events$.subscribe({ next: (event) => out.push(event.action), error: (error: unknown) => errors.push(error) });
    events.next(fake.event('instance-updated', 'default', 'c1'));
    expect(errors).toEqual([new Error('bug in a wants table')]);
    events.next(fake.event('instance-updated', 'default', 'c1'));
    expect(fake.count()).toBe(0);
    expect(out).toEqual([]);
    expect(unhandled).toEqual([]);
  });
});

/** An `instance-updated` about `default/c1`, as the decode stage hands it on. */
function decoded(): EnrichedEvent {
  return newEvent({ action: 'instance-updated', project: 'default', name: 'c1', origin: 'incus', received: 0 });
}
