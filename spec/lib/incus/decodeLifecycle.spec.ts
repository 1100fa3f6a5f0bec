import fc from 'fast-check';
import { decodeLifecycle, LifecycleDecoding } from '../../../lib/incus/decodeLifecycle';

// Captured verbatim from LXD 5.0.2 (lxd-fixture.md §3), each with the trailing newline LXD sends.
const LXD = {
  created:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:11:25.939898892Z","metadata":{"action":"instance-created","source":"/1.0/instances/ev1","context":{"storage-pool":"default","type":"container"}},"location":"none","project":"default"}\n',
  started:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:11:26.343811125Z","metadata":{"action":"instance-started","source":"/1.0/instances/ev1","requestor":{"username":"root","protocol":"unix","address":"@"}},"location":"none","project":"default"}\n',
  renamed:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:11:30.591641881Z","metadata":{"action":"instance-renamed","source":"/1.0/instances/ev2","context":{"old_name":"ev1"}},"location":"none","project":"default"}\n',
  renamedInP2:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:11:37.886772901Z","metadata":{"action":"instance-renamed","source":"/1.0/instances/pe2?project=p2","context":{"old_name":"pe1"}},"location":"none","project":"p2"}\n',
  networkUpdated:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:11:31.578746292Z","metadata":{"action":"network-updated","source":"/1.0/networks/rxbr1","requestor":{"username":"root","protocol":"unix","address":"@"}},"location":"none","project":"default"}\n',
  projectCreated:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:11:32.999352293Z","metadata":{"action":"project-created","source":"/1.0/projects/p3","requestor":{"username":"root","protocol":"unix","address":"@"}},"location":"none","project":"p3"}\n',
  shutdown:
    '{"type":"lifecycle","timestamp":"2026-11-29T10:12:05.119594953Z","metadata":{"action":"instance-shutdown","source":"/1.0/instances/r1"},"location":"none","project":"default"}\n',
};

// The newer Incus shape: the same envelope, plus metadata.name and metadata.project
// (api.EventLifecycle, extension event_lifecycle_name_and_project), and Go's local-offset timestamp.
const INCUS = {
  started:
    '{"type":"lifecycle","timestamp":"2026-11-29T11:02:03.5-05:00","metadata":{"action":"instance-started","source":"/1.0/instances/web1?project=shop","requestor":{"username":"ci","protocol":"tls","address":"10.0.0.9:51234"},"name":"web1","project":"shop"},"location":"node2","project":"shop"}\n',
  renamed:
    '{"type":"lifecycle","timestamp":"2026-11-29T11:02:04Z","metadata":{"action":"instance-renamed","source":"/1.0/instances/web2?project=shop","context":{"old_name":"web1"},"name":"web2","project":"shop"},"location":"node2","project":"shop"}\n',
  // A snapshot's name is more than the last segment; metadata.name wins over the source.
  snapshot:
    '{"type":"lifecycle","timestamp":"2026-11-29T11:02:05Z","metadata":{"action":"instance-snapshot-created","source":"/1.0/instances/web2/snapshots/s0?project=shop","name":"web2/s0","project":"shop"},"location":"node2","project":"shop"}\n',
};

function event(decoding: LifecycleDecoding) {
  if (decoding.kind !== 'event') throw new Error(`expected an event, got ${decoding.kind}: ${decoding.reason}`);
  return decoding.event;
}

describe('decodeLifecycle', () => {
  describe('the LXD 5.0 shape (project on the envelope, no metadata.name)', () => {
    it('takes the name from the source and the project from the envelope', () => {
      expect(decodeLifecycle(LXD.created)).toEqual({
        kind: 'event',
        event: {
          action: 'instance-created',
          project: 'default',
          name: 'ev1',
          source: '/1.0/instances/ev1',
          timestamp: '2026-11-29T10:11:25.939898892Z',
          location: 'none',
        },
      });
      expect(event(decodeLifecycle(LXD.started))).toMatchObject({ action: 'instance-started', name: 'ev1', project: 'default' });
      expect(event(decodeLifecycle(LXD.shutdown))).toMatchObject({ action: 'instance-shutdown', name: 'r1', project: 'default' });
    });

    it('carries the old name of a rename, the new one being the source', () => {
      const renamed = event(decodeLifecycle(LXD.renamed));
      expect(renamed).toMatchObject({ action: 'instance-renamed', name: 'ev2', oldName: 'ev1', project: 'default' });
    });

    it('drops the ?project= query from the name in a non-default project', () => {
      expect(event(decodeLifecycle(LXD.renamedInP2))).toEqual({
        action: 'instance-renamed',
        project: 'p2',
        name: 'pe2',
        oldName: 'pe1',
        source: '/1.0/instances/pe2?project=p2',
        timestamp: '2026-11-29T10:11:37.886772901Z',
        location: 'none',
      });
    });

    it('decodes network and project events', () => {
      expect(event(decodeLifecycle(LXD.networkUpdated))).toMatchObject({ action: 'network-updated', name: 'rxbr1', project: 'default' });
      expect(event(decodeLifecycle(LXD.projectCreated))).toMatchObject({ action: 'project-created', name: 'p3', project: 'p3' });
    });

    it('sets no oldName where there is no rename', () => {
      expect(event(decodeLifecycle(LXD.created))).not.toHaveProperty('oldName');
    });
  });

  describe('the Incus shape (metadata.name and metadata.project)', () => {
    it('takes name and project from the metadata', () => {
      expect(event(decodeLifecycle(INCUS.started))).toEqual({
        action: 'instance-started',
        project: 'shop',
        name: 'web1',
        source: '/1.0/instances/web1?project=shop',
        timestamp: '2026-11-29T11:02:03.5-05:00',
        location: 'node2',
      });
      expect(event(decodeLifecycle(INCUS.renamed))).toMatchObject({ name: 'web2', oldName: 'web1', project: 'shop' });
    });

    it('prefers metadata.name over the last segment of the source', () => {
      expect(event(decodeLifecycle(INCUS.snapshot)).name).toBe('web2/s0');
    });

    it('prefers metadata.project over the envelope when they disagree', () => {
      const frame = JSON.stringify({
        type: 'lifecycle',
        timestamp: 't',
        metadata: { action: 'instance-updated', source: '/1.0/instances/a?project=x', name: 'a', project: 'x' },
        project: 'y',
      });
      expect(event(decodeLifecycle(frame)).project).toBe('x');
    });
  });

  describe('where the project is not said outright', () => {
    const lifecycle = (metadata: object, envelope: object = {}): string =>
      JSON.stringify({ type: 'lifecycle', timestamp: '2026-11-29T10:00:00Z', metadata, ...envelope });

    it('falls back to the source query when neither metadata nor envelope names one', () => {
      expect(event(decodeLifecycle(lifecycle({ action: 'instance-started', source: '/1.0/instances/c1?project=p7' }))).project).toBe('p7');
    });

    it("takes a project event's own project from its source", () => {
      expect(event(decodeLifecycle(lifecycle({ action: 'project-deleted', source: '/1.0/projects/gone' }))).project).toBe('gone');
    });

    it('means the default project when nothing names one, as the REST API does', () => {
      expect(event(decodeLifecycle(lifecycle({ action: 'profile-updated', source: '/1.0/profiles/default' }))).project).toBe('default');
      expect(event(decodeLifecycle(lifecycle({ action: 'instance-started', source: '/1.0/instances/c1' }, { project: '' }))).project).toBe(
        'default',
      );
    });

    it('percent-decodes the name taken from the source', () => {
      expect(event(decodeLifecycle(lifecycle({ action: 'profile-created', source: '/1.0/profiles/my%20profile?project=p' }))).name).toBe(
        'my profile',
      );
    });
  });

  describe('what is ignored', () => {
    it('ignores other event types', () => {
      const operation = '{"type":"operation","timestamp":"2026-11-29T10:11:25Z","metadata":{"id":"x","class":"task"},"project":"default"}';
      expect(decodeLifecycle(operation)).toEqual({ kind: 'ignored', reason: 'event type "operation"' });
      expect(decodeLifecycle('{"type":"logging","metadata":{"message":"m"}}').kind).toBe('ignored');
    });

    it('ignores a lifecycle event with an empty or absent action', () => {
      expect(decodeLifecycle('{"type":"lifecycle","metadata":{"action":"","source":"/1.0/instances/a"},"project":"default"}').kind).toBe(
        'ignored',
      );
      expect(decodeLifecycle('{"type":"lifecycle","metadata":{"source":"/1.0/instances/a"},"project":"default"}').kind).toBe('ignored');
    });
  });

  describe('what is malformed', () => {
    it.each([
      ['not JSON', 'not json at all'],
      ['truncated JSON', LXD.started.slice(0, 60)],
      ['a JSON array', '[1,2]'],
      ['a JSON string', '"lifecycle"'],
      ['null', 'null'],
      ['a type that is not a string', '{"type":7,"metadata":{}}'],
      ['no type at all', '{"metadata":{"action":"instance-started","source":"/1.0/instances/a"},"project":"default"}'],
      ['no metadata', '{"type":"lifecycle","project":"default"}'],
      ['metadata that is an array', '{"type":"lifecycle","metadata":[]}'],
      ['an action that is not a string', '{"type":"lifecycle","metadata":{"action":1,"source":"/1.0/instances/a"}}'],
      ['a source that is not a string', '{"type":"lifecycle","metadata":{"action":"instance-started","source":{}}}'],
      ['a name that is not a string', '{"type":"lifecycle","metadata":{"action":"instance-started","source":"/1.0/instances/a","name":3}}'],
      [
        'a project that is not a string',
        '{"type":"lifecycle","metadata":{"action":"instance-started","source":"/1.0/instances/a"},"project":["p"]}',
      ],
      ['neither source nor name', '{"type":"lifecycle","metadata":{"action":"instance-started"},"project":"default"}'],
      // Refused before they are built (issue 37): no server nests an event so, or fills one so.
      ['metadata nested 100,000 arrays deep', `{"type":"lifecycle","metadata":${'['.repeat(100_000)}${']'.repeat(100_000)}}`],
      [
        'a context of 100,000 empty objects',
        `{"type":"lifecycle","metadata":{"action":"instance-started","context":[${Array(100_000).fill('{}').join(',')}]}}`,
      ],
    ])('%s', (_what, frame) => {
      const decoding = decodeLifecycle(frame);
      expect(decoding.kind).toBe('malformed');
      if (decoding.kind === 'malformed') expect(decoding.reason.length).toBeGreaterThan(0);
    });

    it('quotes the start of the frame, cut short, in the reason', () => {
      const long = `{"type":"lifecycle","metadata":{"action":5},"pad":"${'x'.repeat(1000)}"}`;
      const decoding = decodeLifecycle(long);
      expect(decoding.kind).toBe('malformed');
      if (decoding.kind === 'malformed') {
        expect(decoding.reason).toContain('{"type":"lifecycle","metadata":{"action":5}');
        expect(decoding.reason.length).toBeLessThan(300);
      }
    });

    it('says why a frame past the bounds was refused, quoting only its start', () => {
      const decoding = decodeLifecycle(`{"type":"lifecycle","metadata":${'['.repeat(300_000)}${']'.repeat(300_000)}}`);
      expect(decoding).toEqual({
        kind: 'malformed',
        reason: expect.stringMatching(/^nested deeper than 32 levels: \{"type":"lifecycle","metadata":\[+\.\.\.$/),
      });
      if (decoding.kind === 'malformed') expect(decoding.reason.length).toBeLessThan(300);
    });

    it('keeps an event whose optional extras have the wrong type, leaving them out', () => {
      const frame =
        '{"type":"lifecycle","timestamp":12,"metadata":{"action":"instance-renamed","source":"/1.0/instances/b","context":{"old_name":7}},"location":false,"project":"default"}';
      expect(event(decodeLifecycle(frame))).toEqual({
        action: 'instance-renamed',
        project: 'default',
        name: 'b',
        source: '/1.0/instances/b',
        timestamp: '',
      });
    });
  });

  describe('properties', () => {
    it('never throws, and always says what the frame was', () => {
      const frames = fc.oneof(
        fc.string(),
        fc.json(),
        fc.jsonValue().map((v) => JSON.stringify(v)),
        fc
          .record(
            {
              type: fc.oneof(fc.constant('lifecycle'), fc.jsonValue()),
              metadata: fc.oneof(
                fc.dictionary(fc.constantFrom('action', 'source', 'name', 'project', 'context'), fc.jsonValue()),
                fc.jsonValue(),
              ),
              project: fc.jsonValue(),
              location: fc.jsonValue(),
              timestamp: fc.jsonValue(),
            },
            { requiredKeys: [] },
          )
          .map((v) => JSON.stringify(v)),
      );
      fc.assert(
        fc.property(frames, (frame) => {
          const decoding = decodeLifecycle(frame);
          expect(['event', 'ignored', 'malformed']).toContain(decoding.kind);
          if (decoding.kind === 'event') {
            expect(typeof decoding.event.action).toBe('string');
            expect(decoding.event.action).not.toBe('');
            expect(decoding.event.name).not.toBe('');
            expect(decoding.event.project).not.toBe('');
          } else {
            expect(decoding.reason).not.toBe('');
          }
        }),
        { numRuns: 2000 },
      );
    });

    it('recovers name, project and old name from any LXD 5.0 or Incus frame built from them', () => {
      const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,14}$/);
      fc.assert(
        fc.property(word, word, fc.option(word, { nil: undefined }), fc.boolean(), (name, project, oldName, incus) => {
          const query = project === 'default' ? '' : `?project=${project}`;
          const metadata: Record<string, unknown> = { action: 'instance-renamed', source: `/1.0/instances/${name}${query}` };
          if (oldName !== undefined) metadata.context = { old_name: oldName };
          if (incus) Object.assign(metadata, { name, project });
          const frame = `${JSON.stringify({ type: 'lifecycle', timestamp: '2026-11-29T10:00:00Z', metadata, location: 'none', project })}\n`;
          const decoded = event(decodeLifecycle(frame));
          expect(decoded.name).toBe(name);
          expect(decoded.project).toBe(project);
          expect(decoded.oldName).toBe(oldName);
        }),
      );
    });
  });
});
