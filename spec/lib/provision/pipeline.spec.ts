import { Observable, Subject, map, of } from 'rxjs';
import { workDone, workFailed, PauseGate } from '@rxfleet/operators';
import { PipelineHooks, provisionPipeline } from '../../../lib/provision/pipeline';
import { newScheduler } from '../../helpers/marbles';
import { CycleOutcome } from '../../../lib/provision/cycle/cycleResult';
import { HostTicket } from '../../../lib/provision/sightings/sighting';

type Run = ReturnType<typeof newScheduler>;

/** Records every hook call as `<frame> <what>`. */
function recorder(scheduler: Run): { hooks: PipelineHooks; log: string[] } {
  const log: string[] = [];
  const at = (what: string) => log.push(`${scheduler.now()} ${what}`);
  return {
    log,
    hooks: {
      discoveryStarted: () => at('discover'),
      discoveryFailed: (e) => at(`discovery failed: ${(e as Error).message}`),
      admitted: (t) => at(`admit ${t.value.identity} via ${t.value.via}${t.value.readmission === true ? ' again' : ''}`),
      refused: (r) => at(`refuse ${r.key} ${r.reason}`),
      discoverySkipped: () => at('skip discovery'),
      droppedWhilePaused: (s) => at(`dropped ${s.identity} via ${s.via}`),
    },
  };
}

const summary = (r: { ticket: HostTicket; outcome: { status: string } }): string => `${r.ticket.key}:${r.outcome.status}`;

describe('provisionPipeline', () => {
  it('discovers at start and every interval, admits each node once, and counts the two sources apart', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    let round = 0;
    scheduler.run(({ cold, hot, expectObservable }) => {
      const events = hot('---a-b----', { a: 'n1', b: 'n3' });
      const result = provisionPipeline({
        discover: () => of(round++ === 0 ? ['n1', 'n2'] : []),
        startupEvents: events,
        gate: new PauseGate(),
        provision: () => cold('--d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 4,
        hooks,
        scheduler,
      }).pipe(map(summary));
      expectObservable(result, '25ms !').toBe('--(ab)-c', { a: 'n1:done', b: 'n2:done', c: 'n3:done' });
    });
    expect(log).toEqual([
      '0 discover',
      '0 admit n1 via discovery',
      '0 admit n2 via discovery',
      '3 refuse n1 held',
      '5 admit n3 via event',
      '10 discover',
      '20 discover',
    ]);
  });

  it('reports each discovery round: how many nodes it found and how many were not already held', () => {
    const scheduler = newScheduler();
    const rounds: string[] = [];
    let round = 0;
    scheduler.run(({ cold, expectObservable }) => {
      const result = provisionPipeline({
        discover: () => of(round++ === 0 ? ['n1', 'n2'] : ['n1', 'n2', 'n3']),
        startupEvents: cold('-'),
        gate: new PauseGate(),
        // Still running at the second round: n1 and n2 are held then.
        provision: () => cold('-----------------d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 4,
        hooks: { discoveryFinished: (found, fresh) => rounds.push(`${scheduler.now()} found ${found}, new ${fresh}`) },
        scheduler,
      }).pipe(map(summary));
      expectObservable(result, '15ms !').toBe('-');
    });
    expect(rounds).toEqual(['0 found 2, new 2', '10 found 3, new 1']);
  });

  it('while paused: no discovery round and events dropped; resuming lets the next tick discover; winning discovers at once', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    scheduler.run(({ cold, hot, expectObservable }) => {
      const gate = new PauseGate(true);
      const won = new Subject<void>();
      scheduler.schedule(() => {
        gate.resume();
        won.next();
      }, 15);
      const result = provisionPipeline({
        discover: () => cold('(r|)', { r: ['n1'] }),
        startupEvents: hot('--e-----', { e: 'n2' }),
        won,
        gate,
        provision: () => cold('d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 1,
        hooks,
        scheduler,
      }).pipe(map(summary));
      expectObservable(result, '25ms !').toBe('15ms a', { a: 'n1:done' });
    });
    expect(log).toEqual([
      '0 skip discovery',
      '2 dropped n2 via event',
      '10 skip discovery',
      '15 discover',
      '15 admit n1 via discovery',
      '20 discover',
      '20 refuse n1 held',
    ]);
  });

  it('drops what a discovery round already in flight finds once the instance is paused', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    scheduler.run(({ cold, hot }) => {
      const gate = new PauseGate();
      scheduler.schedule(() => gate.pause(), 2);
      const sub = provisionPipeline({
        discover: () => cold('----(r|)', { r: ['n1'] }),
        startupEvents: hot('-'),
        gate,
        provision: () => cold('d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 1,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 12);
    });
    expect(log).toEqual(['0 discover', '4 dropped n1 via discovery', '10 skip discovery']);
  });

  it('a lost election resets the ledger: queued nodes are skipped unrun, and rediscovered after winning again', () => {
    const scheduler = newScheduler();
    const provisioned: string[] = [];
    scheduler.run(({ cold, hot, expectObservable }) => {
      const gate = new PauseGate();
      // As the daemon does: losing pauses and resets; winning resumes and triggers a discovery.
      const lost = hot('--l', { l: 'lost' });
      const won = hot('12ms w', { w: 'won' });
      lost.subscribe(() => gate.pause());
      won.subscribe(() => gate.resume());
      const result = provisionPipeline({
        discover: () => of(['n1', 'n2', 'n3']),
        startupEvents: hot('-'),
        lost,
        won,
        gate,
        provision: (t) => {
          provisioned.push(`${scheduler.now()} ${t.key}`);
          return cold('-----d', { d: workDone('provisioned') as CycleOutcome });
        },
        interval: 10,
        workers: 1,
        scheduler,
      }).pipe(map(summary));
      // n1 was already running and finishes; n2 and n3 were queued at the reset and are skipped
      // when the worker reaches them; the round at 10 is dropped (paused); winning at 12 admits all.
      expectObservable(result, '25ms !').toBe('5ms (abc) 7ms d 4ms e', {
        a: 'n1:done',
        b: 'n2:skipped',
        c: 'n3:skipped',
        d: 'n1:done',
        e: 'n2:done',
      });
    });
    expect(provisioned).toEqual(['0 n1', '12 n1', '17 n2', '22 n3']);
  });

  it('releases a failed node at once, an upgraded one at once, a provisioned one only after the settle time', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    let round = 0;
    scheduler.run(({ cold, hot }) => {
      const outcomes: Record<string, CycleOutcome> = {
        bad: workFailed(new Error('configure failed')),
        up: workDone('upgraded'),
        ok: workDone('provisioned'),
      };
      // Sightings inside the 30-frame window: only a held key refuses them.
      const events = hot('-----(xyz)----------o', { x: 'bad', y: 'up', z: 'ok', o: 'ok' });
      const sub = provisionPipeline({
        discover: () => of(round++ === 0 ? ['bad', 'up', 'ok'] : []),
        startupEvents: events,
        gate: new PauseGate(),
        provision: (t) => cold('d', { d: outcomes[t.key] }),
        interval: 30,
        workers: 3,
        settleMs: 15,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 25);
    });
    expect(log).toEqual([
      '0 discover',
      '0 admit bad via discovery',
      '0 admit up via discovery',
      '0 admit ok via discovery',
      '5 admit bad via event',
      '5 admit up via event',
      '5 refuse ok held',
      '20 admit ok via event',
    ]);
  });

  it("does not upgrade a node twice: a round's answer from before its upgrade is dropped; its startup event, and any later round, admit it", () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    let cycles = 0;
    scheduler.run(({ cold, hot }) => {
      // Round 1 (frame 0) answers `up` at once; round 2 opens at frame 2, while `up`'s upgrade is
      // under way, and answers at frame 10, after it ended (frame 5): that answer is from before.
      const rounds = [cold('(a|)', { a: ['up'] }), cold('----------(a|)', { a: ['up'] }), cold('(a|)', { a: ['up'] })];
      const sub = provisionPipeline({
        discover: () => rounds.shift() ?? of([]),
        discoverNow: hot('--n----------------------------n', { n: undefined }),
        startupEvents: hot('--------------------e', { e: 'up' }),
        gate: new PauseGate(),
        provision: () => cold('-----d', { d: cycles++ === 0 ? 'upgraded' : 'provisioned' }).pipe(map((v) => workDone(v as 'upgraded'))),
        interval: 1000,
        workers: 2,
        settleMs: 5,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 40);
    });
    expect(log).toEqual([
      '0 discover',
      '0 admit up via discovery',
      '2 discover',
      '20 admit up via event',
      '31 discover',
      '31 admit up via discovery',
    ]);
  });

  it('a node whose lock another provisioner holds keeps its key for the lock hold time, then is admitted again (P10)', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => of([]),
        startupEvents: hot('e-----e-------e', { e: 'owned' }),
        gate: new PauseGate(),
        provision: () => cold('d', { d: workDone('locked') as CycleOutcome }),
        interval: 100,
        workers: 1,
        settleMs: 3,
        lockHoldMs: 10,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 20);
    });
    // Refused while held at 6 (held for 10, not the 3 of a provisioned node); free again at 14.
    expect(log.filter((l) => !l.endsWith('discover'))).toEqual([
      '0 admit owned via event',
      '6 refuse owned held',
      '14 admit owned via event',
    ]);
  });

  it('a discoverNow emission starts a round at once, as a won election does, unless paused', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    const gate = new PauseGate();
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => of([]),
        startupEvents: hot('-'),
        discoverNow: hot('---r----r', { r: 'reconnected' }),
        gate,
        provision: () => cold('d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 100,
        workers: 1,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => gate.pause(), 6);
      scheduler.schedule(() => sub.unsubscribe(), 20);
    });
    expect(log).toEqual(['0 discover', '3 discover', '8 skip discovery']);
  });

  it('with a claim stage every cycle runs under it; a node claimed elsewhere is released at once, a provisioned one after the settle (P16)', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    const around: string[] = [];
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => of([]),
        startupEvents: hot('ab---ab', { a: 'mine', b: 'theirs' }),
        gate: new PauseGate(),
        claims: {
          around: (ticket, cycle) => {
            around.push(`${scheduler.now()} ${ticket.key}`);
            return ticket.key === 'theirs' ? of(workDone('claimed') as CycleOutcome) : cycle();
          },
        },
        provision: () => cold('d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 100,
        workers: 2,
        settleMs: 10,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 20);
    });
    expect(around).toEqual(['0 mine', '1 theirs', '6 theirs']);
    expect(log.filter((l) => !l.endsWith('discover'))).toEqual([
      '0 admit mine via event',
      '1 admit theirs via event',
      '5 refuse mine held',
      '6 admit theirs via event',
    ]);
  });

  it('re-admits a node whose sighting is older than the interval while its cycle still runs (DECISIONS P1)', () => {
    const scheduler = newScheduler();
    const starts: string[] = [];
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => of(['slow']),
        startupEvents: hot('-'),
        gate: new PauseGate(),
        provision: (t) => {
          starts.push(`${scheduler.now()} ${t.key}`);
          return cold('15ms d', { d: workDone('provisioned') as CycleOutcome });
        },
        interval: 10,
        workers: 2,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 12);
    });
    // The first cycle is still running at 10: the held sighting is a whole interval old, so the
    // node is admitted again; a duplicate costs less than a dropped node.
    expect(starts.slice(0, 2)).toEqual(['0 slow', '10 slow']);
  });

  it("marks a re-admission as such, so upstream's discovered counts each node once while it is held", () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => of(['slow']),
        startupEvents: hot('-'),
        gate: new PauseGate(),
        provision: () => cold('25ms d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 2,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 12);
    });
    expect(log.filter((l) => l.includes('admit'))).toEqual(['0 admit slow via discovery', '10 admit slow via discovery again']);
  });

  it('a failed discovery round is reported and the next tick tries again', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    let round = 0;
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => (++round === 1 ? cold('-#', undefined, new Error('no responders')) : of(['n1'])),
        startupEvents: hot('-'),
        gate: new PauseGate(),
        provision: () => cold('d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 1,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 12);
    });
    expect(log.slice(0, 4)).toEqual(['0 discover', '1 discovery failed: no responders', '10 discover', '10 admit n1 via discovery']);
  });

  it('runs one discovery round at a time: ticks during a slow round are dropped', () => {
    const scheduler = newScheduler();
    const { hooks, log } = recorder(scheduler);
    scheduler.run(({ cold, hot }) => {
      const sub = provisionPipeline({
        discover: () => cold('25ms (r|)', { r: [] as string[] }),
        startupEvents: hot('-'),
        gate: new PauseGate(),
        provision: () => new Observable<CycleOutcome>(),
        interval: 10,
        workers: 1,
        hooks,
        scheduler,
      }).subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 45);
    });
    expect(log.filter((l) => l.endsWith('discover'))).toEqual(['0 discover', '30 discover']);
  });

  it('stop ends discovery and events but lets admitted work finish, then completes', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const events = hot('-----e---e', { e: 'late' });
      const result = provisionPipeline({
        discover: () => of(['n1']),
        startupEvents: events,
        gate: new PauseGate(),
        provision: () => cold('8ms d', { d: workDone('provisioned') as CycleOutcome }),
        interval: 10,
        workers: 1,
        stop: hot('---s', { s: 'stop' }),
        scheduler,
      }).pipe(map(summary));
      expectObservable(result).toBe('8ms (a|)', { a: 'n1:done' });
      expectSubscriptions(events.subscriptions).toBe('^--!');
    });
  });

  describe('the Incus source (a third sighting source)', () => {
    it('admits an Incus sighting at once, counted apart; discovery and the startup event of the same node are refused while it is held', () => {
      const scheduler = newScheduler();
      const { hooks, log } = recorder(scheduler);
      scheduler.run(({ cold, hot, expectObservable }) => {
        const incus = hot('--i------', { i: 'web1' });
        const events = hot('----e----', { e: 'web1' });
        let round = 0;
        const result = provisionPipeline({
          discover: () => of(round++ === 0 ? [] : ['web1']),
          startupEvents: events,
          incusSightings: incus,
          gate: new PauseGate(),
          provision: () => cold('10ms d', { d: workDone('provisioned') as CycleOutcome }),
          interval: 6,
          workers: 2,
          hooks,
          scheduler,
        }).pipe(map(summary));
        expectObservable(result, '14ms !').toBe('12ms a', { a: 'web1:done' });
      });
      expect(log).toEqual([
        '0 discover',
        '2 admit web1 via incus',
        '4 refuse web1 held',
        '6 discover',
        '6 refuse web1 held',
        '12 discover',
        '12 refuse web1 held',
      ]);
    });

    it('drops Incus sightings while paused, like any other, and stops reading them on stop', () => {
      const scheduler = newScheduler();
      const { hooks, log } = recorder(scheduler);
      scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
        const gate = new PauseGate(true);
        scheduler.schedule(() => gate.resume(), 3);
        const incus = hot('-a---b--c', { a: 'n1', b: 'n2', c: 'n3' });
        const result = provisionPipeline({
          discover: () => of([]),
          startupEvents: hot('-'),
          incusSightings: incus,
          gate,
          provision: () => cold('d', { d: workDone('provisioned') as CycleOutcome }),
          interval: 100,
          workers: 1,
          hooks,
          stop: hot('-------s'),
          scheduler,
        }).pipe(map(summary));
        expectObservable(result).toBe('5ms a-|', { a: 'n2:done' });
        expectSubscriptions(incus.subscriptions).toBe('^------!');
      });
      expect(log).toEqual(['0 skip discovery', '1 dropped n1 via incus', '5 admit n2 via incus']);
    });
  });
});
