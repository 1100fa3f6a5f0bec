import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Observable, Subscription } from 'rxjs';
import { IncusLifecycleEvent, IncusStreamItem } from '../../../lib/incus/api';
import { wsEventSocket } from '../../../streams/incus/eventSocket';
import { incusEndpoint } from '../../../streams/incus/incusEndpoint';
import { IncusEventsOptions, eventsPath, incusEvents } from '../../../streams/incus/incusEvents';
import { freePort } from '../../../streams/natsServerProcess';
import { selfSignedCertificate } from '../../helpers/certs';
import { DAEMON_KINDS, useTestDaemon } from '../../helpers/testDaemon';

// The lifecycle stream against a real LXD 5.0 daemon: what `lxc` does arrives decoded, in order,
// from every project; a daemon restart and a frozen daemon end the session and it comes back.
// The waits are generous and only bound how long a failure takes to show; nothing asserts a duration.

const WAIT = 60_000;

/** Everything a stream emitted, and a way to wait for the next item that matches. */
class Recorder {
  readonly items: IncusStreamItem[] = [];
  private readonly subscription: Subscription;
  private waiters: Array<() => void> = [];

  constructor(stream: Observable<IncusStreamItem>) {
    this.subscription = stream.subscribe((item) => {
      this.items.push(item);
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
    });
  }

  /** The index of the first item at or after `from` that matches, waiting for it if need be. */
  async next(match: (item: IncusStreamItem) => boolean, from: number, what: string): Promise<number> {
    const deadline = Date.now() + WAIT;
    for (;;) {
      const found = this.items.findIndex((item, i) => i >= from && match(item));
      if (found >= 0) return found;
      if (Date.now() > deadline) throw new Error(`no ${what} after item ${from}; saw ${JSON.stringify(this.items.slice(from))}`);
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, 1000);
        this.waiters.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  /** Waits for the lifecycle event `action` about `name` in `project`, at or after `from`. */
  event(action: string, name: string, project: string, from: number): Promise<number> {
    return this.next(
      (item) => item.kind === 'event' && item.event.action === action && item.event.name === name && item.event.project === project,
      from,
      `${action} ${project}/${name}`,
    );
  }

  eventAt(index: number): IncusLifecycleEvent {
    const item = this.items[index];
    if (item.kind !== 'event') throw new Error(`item ${index} is ${item.kind}`);
    return item.event;
  }

  stop(): void {
    this.subscription.unsubscribe();
  }
}

describe.each(DAEMON_KINDS)('incusEvents against a real %s daemon', (kind) => {
  const host = useTestDaemon(kind);
  let recorder: Recorder;
  const listen = (options: IncusEventsOptions = {}): Recorder =>
    new Recorder(incusEvents({ endpoint: { url: host().socket }, ...options }));

  beforeAll(async () => {
    recorder = listen();
    await recorder.next((item) => item.kind === 'connected', 0, 'connected');
  }, WAIT);

  afterAll(() => recorder?.stop());

  it('starts with connected', () => {
    expect(recorder.items[0]).toEqual({ kind: 'connected' });
  });

  it(
    'reports a launch as instance-created then instance-started, named and in the default project',
    async () => {
      const from = recorder.items.length;
      await host().launch('ev1');
      const created = await recorder.event('instance-created', 'ev1', 'default', from);
      const started = await recorder.event('instance-started', 'ev1', 'default', from);
      expect(created).toBeLessThan(started);
      expect(recorder.eventAt(started)).toMatchObject({ source: '/1.0/instances/ev1', location: 'none' });
      expect(recorder.eventAt(started).timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    },
    WAIT,
  );

  it(
    'reports a rename with the new name and the old one, and then the delete',
    async () => {
      await host().launch('ren1');
      await host().stopInstance('ren1');
      const from = recorder.items.length;
      await host().rename('ren1', 'ren2');
      await host().deleteInstance('ren2');
      const renamed = await recorder.event('instance-renamed', 'ren2', 'default', from);
      expect(recorder.eventAt(renamed).oldName).toBe('ren1');
      const deleted = await recorder.event('instance-deleted', 'ren2', 'default', from);
      expect(renamed).toBeLessThan(deleted);
    },
    WAIT,
  );

  it(
    'reports a profile update, and the update of each instance using the profile',
    async () => {
      await host().launch('prof1');
      const from = recorder.items.length;
      await host().setProfileConfig('default', 'user.rxfleet', 'profile-spec');
      const profile = await recorder.event('profile-updated', 'default', 'default', from);
      const instance = await recorder.event('instance-updated', 'prof1', 'default', from);
      expect(recorder.eventAt(profile).source).toBe('/1.0/profiles/default');
      expect(recorder.eventAt(instance).source).toBe('/1.0/instances/prof1');
    },
    WAIT,
  );

  it(
    'reports network updates',
    async () => {
      const from = recorder.items.length;
      await host().setNetworkConfig(host().bridge, 'user.rxfleet', 'network-spec');
      const updated = await recorder.event('network-updated', host().bridge, 'default', from);
      expect(recorder.eventAt(updated).source).toBe(`/1.0/networks/${host().bridge}`);
    },
    WAIT,
  );

  it(
    "reports another project's instances and the project's own events, through all-projects",
    async () => {
      const from = recorder.items.length;
      await host().createProject('pe');
      await host().launch('pi1', { project: 'pe' });
      await host().stopInstance('pi1', { project: 'pe' });
      await host().rename('pi1', 'pi2', { project: 'pe' });
      await host().deleteInstance('pi2', { project: 'pe' });
      await host().setProjectConfig('pe', 'user.rxfleet', 'project-spec');
      await host().deleteProject('pe');

      const created = await recorder.event('project-created', 'pe', 'pe', from);
      const started = await recorder.event('instance-started', 'pi1', 'pe', from);
      expect(recorder.eventAt(started).source).toBe('/1.0/instances/pi1?project=pe');
      const renamed = await recorder.event('instance-renamed', 'pi2', 'pe', from);
      expect(recorder.eventAt(renamed).oldName).toBe('pi1');
      const updated = await recorder.event('project-updated', 'pe', 'pe', from);
      const deleted = await recorder.event('project-deleted', 'pe', 'pe', from);
      expect([created, started, renamed, updated, deleted]).toEqual(
        [...[created, started, renamed, updated, deleted]].sort((a, b) => a - b),
      );
    },
    WAIT,
  );

  it(
    'hears nothing of other projects when listening to the default project alone',
    async () => {
      const narrow = listen({ allProjects: false });
      try {
        await narrow.next((item) => item.kind === 'connected', 0, 'connected');
        await host().createProject('pq');
        await host().launch('nq', { project: 'pq' });
        await host().setInstanceConfig('ev1', 'user.marker', 'after-pq');
        await narrow.event('instance-updated', 'ev1', 'default', 0);
        await recorder.event('instance-started', 'nq', 'pq', 0);
        expect(narrow.items.filter((item) => item.kind === 'event' && item.event.project === 'pq')).toEqual([]);
        await host().deleteInstance('nq', { project: 'pq' });
        await host().deleteProject('pq');
      } finally {
        narrow.stop();
      }
    },
    WAIT,
  );

  it("passes on the daemon's refusal of an event type it does not serve", async () => {
    const reason = await new Promise<string>((resolve) => {
      wsEventSocket(incusEndpoint({ url: host().socket }), { path: eventsPath({ types: ['bogus'] }) })({
        open: () => resolve('opened'),
        frame: () => undefined,
        alive: () => undefined,
        closed: resolve,
      });
    });
    // A difference written down: Incus answers an unknown event type 400, LXD 500.
    const status = kind === 'incus' ? 400 : 500;
    expect(reason).toBe(`upgrade refused: HTTP ${status} "bogus" isn't a supported event type`);
  });

  it(
    'says disconnected when the daemon restarts, connects again, and events flow again',
    async () => {
      const from = recorder.items.length;
      await host().restart();
      const disconnected = await recorder.next((item) => item.kind === 'disconnected', from, 'disconnected');
      const connected = await recorder.next((item) => item.kind === 'connected', disconnected, 'connected again');
      await host().setInstanceConfig('ev1', 'user.after', 'restart');
      const updated = await recorder.event('instance-updated', 'ev1', 'default', connected);
      expect(disconnected).toBeLessThan(connected);
      expect(connected).toBeLessThan(updated);
      // Nothing of the first session arrives after it ended, and connected/disconnected alternate.
      const sessions = recorder.items.filter((item) => item.kind === 'connected' || item.kind === 'disconnected').map((item) => item.kind);
      expect(sessions).toEqual(['connected', 'disconnected', 'connected']);
    },
    2 * WAIT,
  );

  it(
    'takes a frozen daemon for a half-open connection, and reconnects once it thaws',
    async () => {
      const watchful = listen({ readDeadlineMs: 1500, pingIntervalMs: 300, backoffInitialMs: 100, backoffMaxMs: 500 });
      try {
        await watchful.next((item) => item.kind === 'connected', 0, 'connected');
        await host().freeze();
        let gone: number;
        try {
          gone = await watchful.next((item) => item.kind === 'disconnected', 0, 'disconnected');
        } finally {
          host().thaw();
        }
        expect(watchful.items[gone]).toEqual({ kind: 'disconnected', reason: 'no frame, ping or pong for 1500 ms (half-open connection)' });
        const back = await watchful.next((item) => item.kind === 'connected', gone, 'connected again');
        await host().setInstanceConfig('ev1', 'user.after', 'thaw');
        await watchful.next(
          (item) => item.kind === 'event' && item.event.action === 'instance-updated' && item.event.name === 'ev1',
          back,
          'an event after the thaw',
        );
      } finally {
        watchful.stop();
      }
    },
    2 * WAIT,
  );

  it(
    "listens over wss with a client certificate and the daemon's certificate pinned",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rxfleet-incus-wss-'));
      const port = await freePort();
      try {
        await host().listenHttps(port);
        const client = await selfSignedCertificate('rxfleet-events-spec');
        writeFileSync(join(dir, 'client.crt'), client.cert);
        await host().trustCertificate(join(dir, 'client.crt'), 'rxfleet-events-spec');
        const secure = listen({
          endpoint: {
            url: `https://127.0.0.1:${port}`,
            clientCert: client.cert,
            clientKey: client.key,
            serverCert: join(host().dir, 'server.crt'),
          },
        });
        try {
          expect(await secure.next((item) => item.kind === 'connected', 0, 'connected over wss')).toBe(0);
          await host().launch('tls1');
          const started = await secure.event('instance-started', 'tls1', 'default', 0);
          expect(secure.eventAt(started).source).toBe('/1.0/instances/tls1');
        } finally {
          secure.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    WAIT,
  );
});
