import { COLD_CHAIN, EnricherInput, chainAfter } from '../../../lib/enricher/pipeline/stages';
import { event } from './decisions';

// The chain's warmth (upstream's "chain warm"), read off the input stage's own output: whether a
// burst may collapse. Each case is the inputs in order and the warmth after each.

const up: EnricherInput = { kind: 'connection', connected: true };
const down: EnricherInput = { kind: 'connection', connected: false };
const ended: EnricherInput = { kind: 'round-end', round: 1, ok: true };
const failed: EnricherInput = { kind: 'round-end', round: 1, ok: false, error: new Error('listing failed') };
const live = event('instance-updated', 'default', 'c1');

const cases: Array<{ name: string; inputs: EnricherInput[]; warm: boolean[] }> = [
  { name: 'cold until a round has ended while connected', inputs: [up, live, ended, live], warm: [false, false, true, true] },
  { name: 'a failed round warms nothing', inputs: [up, failed, live], warm: [false, false, false] },
  { name: 'a round that ends while disconnected warms nothing', inputs: [ended, up, live], warm: [false, false, false] },
  {
    name: 'a disconnect cools it, and it stays cold after the reconnect until a round ends again',
    inputs: [up, ended, down, up, live, ended],
    warm: [false, true, false, false, false, true],
  },
];

describe('chainAfter: the chain warmth the debounce collapses by', () => {
  it.each(cases)('$name', ({ inputs, warm }) => {
    let chain = COLD_CHAIN;
    const seen = inputs.map((input) => (chain = chainAfter(chain, input)).warm);
    expect(seen).toEqual(warm);
  });

  it('an input that changes nothing leaves the chain as it was (no copy per event)', () => {
    const warm = chainAfter(chainAfter(COLD_CHAIN, up), ended);
    expect(chainAfter(warm, live)).toBe(warm);
    expect(chainAfter(warm, up)).toBe(warm);
  });
});
