import fc from 'fast-check';
import { AckedEvent, StateLedger, StateWrite, stateHeaders } from '../../../../lib/enricher/jetstream/stateLedger';

// The state bucket's writes without a server: what each acknowledged event writes, one write per
// key at a time, and the watermark that tells a consumer where to start following the stream.

const put = (name: string, seq: number, streamSeq: number, extra: Partial<AckedEvent> = {}): AckedEvent => ({
  streamSeq,
  kind: 'instance',
  project: 'default',
  name,
  action: 'instance-updated',
  seq,
  payload: `{"name":"${name}","instance_seq":${seq}}`,
  record: true,
  ...extra,
});

const short = (w: StateWrite): string => `${w.key}#${w.seq}${w.value === undefined ? ' DEL' : ''}@${w.streamSeq}`;

describe('StateLedger', () => {
  it('writes each key once at a time; a newer write replaces one waiting; the watermark covers what landed', () => {
    const ledger = new StateLedger(10);
    ledger.take(put('c1', 1, 11));
    ledger.take(put('c2', 1, 12));
    const first = ledger.writable();
    expect(first.map(short)).toEqual(['default.c1#1@11', 'default.c2#1@12']);
    ledger.take(put('c1', 2, 13));
    ledger.take(put('c1', 3, 14));
    expect(ledger.writable()).toEqual([]);
    expect(ledger.watermark(Infinity)).toBe(10);
    ledger.written(first[1]);
    expect(ledger.watermark(Infinity)).toBe(10);
    ledger.written(first[0]);
    // c1's 13 and 14 wait (as one write): the bucket is complete to 12.
    expect(ledger.watermark(Infinity)).toBe(12);
    const next = ledger.writable();
    expect(next.map(short)).toEqual(['default.c1#3@14']);
    ledger.written(next[0]);
    expect(ledger.watermark(Infinity)).toBe(14);
    expect(ledger.pending).toBe(0);
  });

  it('never goes past the publish line’s floor, and never goes down', () => {
    const ledger = new StateLedger(5);
    ledger.take(put('c1', 1, 9));
    ledger.written(ledger.writable()[0]);
    expect(ledger.watermark(7)).toBe(7);
    expect(ledger.watermark(3)).toBe(7);
    expect(ledger.watermark(Infinity)).toBe(9);
  });

  it('a delete writes a marker with the sequence; a rename marks the old name gone; a failed read keeps the record and moves the sequence on', () => {
    const ledger = new StateLedger(0, new Map([['default.c1', '{"name":"c1","instance_seq":1}']]));
    ledger.take(put('c1', 2, 1, { record: false, payload: '{"name":"c1","status":"failed","instance_seq":2}' }));
    ledger.take(put('c9', 1, 2, { record: false, payload: '{"name":"c9","status":"failed","instance_seq":1}' }));
    ledger.take(put('new', 1, 3, { action: 'instance-renamed', oldName: 'old', oldSeq: 4 }));
    ledger.take(put('gone', 6, 4, { action: 'instance-deleted', record: false, payload: '{}' }));
    const writes = ledger.writable();
    expect(writes.map(short)).toEqual([
      'default.c1#2@1',
      'default.c9#1@2',
      'default.old#4 DEL@3',
      'default.new#1@3',
      'default.gone#6 DEL@4',
    ]);
    // The failed read carried c1's last record; c9 had none yet, so it carries the event itself.
    expect(writes[0].value).toBe('{"name":"c1","instance_seq":1}');
    expect(writes[1].value).toContain('failed');
    expect(stateHeaders(writes[4])).toEqual([
      ['Rxfleet-Instance-Seq', '6'],
      ['KV-Operation', 'DEL'],
    ]);
  });

  it('a failed write goes again before anything newer about its key; other events never write', () => {
    const ledger = new StateLedger();
    ledger.take(put('c1', 1, 1));
    ledger.take({ ...put('br0', 0, 2), kind: 'network', seq: undefined });
    const [w] = ledger.writable();
    ledger.failed(w);
    expect(ledger.watermark(Infinity)).toBe(0);
    const [again] = ledger.writable();
    expect(again).toBe(w);
    ledger.written(again);
    expect(ledger.watermark(Infinity)).toBe(2);
  });

  it('whatever order writes land or fail in, every event at or below the watermark is in the bucket', () => {
    type Step = { kind: 'take'; key: number } | { kind: 'land'; pick: number } | { kind: 'fail'; pick: number };
    const step = fc.oneof(
      fc.record({ kind: fc.constant('take' as const), key: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('land' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('fail' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps: Step[]) => {
        const ledger = new StateLedger();
        const inFlight: StateWrite[] = [];
        const seqs = [0, 0, 0, 0];
        const bucket = new Map<string, number>(); // key -> highest stream sequence written
        const events: Array<{ key: string; streamSeq: number }> = [];
        let streamSeq = 0;
        for (const s of steps) {
          if (s.kind === 'take') {
            streamSeq++;
            const name = `c${s.key}`;
            ledger.take(put(name, ++seqs[s.key], streamSeq));
            events.push({ key: `default.${name}`, streamSeq });
          } else if (inFlight.length > 0) {
            const [w] = inFlight.splice(s.pick % inFlight.length, 1);
            if (s.kind === 'land') {
              ledger.written(w);
              bucket.set(w.key, Math.max(bucket.get(w.key) ?? 0, w.streamSeq));
            } else ledger.failed(w);
          }
          inFlight.push(...ledger.writable());
          const mark = ledger.watermark(Infinity);
          const missing = events.filter((e) => e.streamSeq <= mark && (bucket.get(e.key) ?? 0) < e.streamSeq);
          expect({ mark, missing }).toEqual({ mark, missing: [] });
        }
      }),
    );
  });
});
