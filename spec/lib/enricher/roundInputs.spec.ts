import { IncusApiError } from '../../../lib/incus/api';
import { parseProjectsServed } from '../../../lib/enricher/model/servedProjects';
import { OwnerView } from '../../../lib/enricher/owner/ownerState';
import { takeRoundInput } from '../../../lib/enricher/owner/roundInputs';
import { RoundContext, RoundSignal } from '../../../lib/enricher/rounds/round';
import { RoundEnd, RoundRead } from '../../../lib/enricher/rounds/roundFeed';
import { effectLine, modelWithBridge, ownerView } from './decisions';

// What a round hands the owner besides instance names, decided as a pure function: each case is
// a view and an input in, the effects out (a round's inputs settle nothing in the line).

const round = new RoundContext(2);
const abandoned = Object.assign(new RoundContext(1), { abandoned: true });

/** The default project with `br0`, `br1`, and instances c1 and c2; project p1 held with c7. */
function heldFleet(): Partial<OwnerView> {
  const model = modelWithBridge();
  const record = {
    type: 'container',
    status: 'Running',
    running: true,
    location: 'none',
    profiles: [],
    config: {},
    interfaces: [],
    networks: {},
  };
  model.setNetwork({ ...model.network('default', 'br0')!, name: 'br1' });
  model.setInstance('default', 'c1', record);
  model.setInstance('default', 'c2', record);
  model.setInstance('p1', 'c7', record);
  return { model };
}

const refused = new IncusApiError('User does not have permissions for project "default"', 500);

interface Case {
  name: string;
  view?: () => Partial<OwnerView>;
  input: RoundRead | RoundSignal | RoundEnd;
  effects: string[];
}

const cases: Case[] = [
  {
    name: 'a project to read: read, the round told when it lands',
    input: { kind: 'round-project', round, name: 'p1' },
    effects: ['read-project p1, round 2'],
  },
  {
    name: 'a project a list does not name: known unserved without a read, held instances leave as deletes, the round told',
    view: () => ({ ...heldFleet(), projects: parseProjectsServed(['default']) }),
    input: { kind: 'round-project', round, name: 'p1' },
    effects: [
      'project-unserved p1',
      'log info: project no longer served: its instances leave as deletes',
      'prune-project p1',
      'parked p1 go nowhere',
      'tell round 2: project p1 unserved',
    ],
  },
  {
    name: 'a project from a round abandoned for a newer one: not read',
    input: { kind: 'round-project', round: abandoned, name: 'p1' },
    effects: [],
  },
  {
    name: 'a network to read: read as its owner sees it, re-reading its instances only if it changed',
    input: { kind: 'round-network', round, owner: 'default', name: 'br1' },
    effects: ['read-network default/br1 as default if-changed, round 2'],
  },
  {
    name: 'a network from an abandoned round: not read',
    input: { kind: 'round-network', round: abandoned, owner: 'default', name: 'br1' },
    effects: [],
  },
  {
    name: "a round's end: handed on for the daemon's state",
    input: { kind: 'round-end', round: 2, ok: true },
    effects: ['notice round-end 2 ok'],
  },
  {
    name: 'projects listed: what was recorded and is not listed is pruned (E5), each taking its instances out as deletes (E4)',
    view: heldFleet,
    input: { kind: 'listed', round, scope: 'projects', listed: ['default'], recorded: ['default', 'p1', 'p2'] },
    effects: ['prune-project p1', 'prune-project p2'],
  },
  {
    name: 'networks listed: a wire no longer listed leaves silently',
    view: heldFleet,
    input: { kind: 'listed', round, scope: 'networks', owner: 'default', listed: ['br0'], recorded: ['br0', 'br1'] },
    effects: ['drop-network default/br1'],
  },
  {
    name: 'instances listed: one recorded, not listed and still held leaves as a prune; one deleted meanwhile says nothing again',
    view: heldFleet,
    input: { kind: 'listed', round, scope: 'instances', project: 'default', listed: ['c1'], recorded: ['c1', 'c2', 'c3'] },
    effects: ['prune-instance default/c2'],
  },
  {
    name: 'a listing refused before and answered now: allowed again, so a later refusal is warned about',
    view: () => ({ forbiddenListings: new Set(['networks of default']) }),
    input: { kind: 'listed', round, scope: 'networks', owner: 'default', listed: ['br0'], recorded: ['br0'] },
    effects: ['listing networks of default allowed'],
  },
  {
    name: "the round's networks landed: the wire map is whole (the owner warms once its project reads are in)",
    input: { kind: 'networks-landed', round },
    effects: ['networks-ready'],
  },
  {
    name: 'a listing failed: warned, nothing pruned in its scope',
    input: { kind: 'listing-failed', round, what: 'instances of p1', error: new Error('timeout') },
    effects: ['log warn: listing instances of p1 failed: skipped this round, nothing pruned'],
  },
  {
    name: 'a listing refused to this client: remembered and warned about once',
    input: { kind: 'listing-failed', round, what: 'networks of default', error: refused },
    effects: [
      'listing networks of default refused',
      `log warn: listing networks of default is not allowed to this client (${refused.message}): skipped in every round, nothing pruned; what its instances use is read by name`,
    ],
  },
  {
    name: 'a listing refused again: at debug, every round',
    view: () => ({ forbiddenListings: new Set(['networks of default']) }),
    input: { kind: 'listing-failed', round, what: 'networks of default', error: refused },
    effects: [
      'listing networks of default refused',
      `log debug: listing networks of default is not allowed to this client (${refused.message}): skipped in every round, nothing pruned; what its instances use is read by name`,
    ],
  },
  {
    name: 'a signal from an abandoned round: ignored',
    view: heldFleet,
    input: { kind: 'listed', round: abandoned, scope: 'projects', listed: [], recorded: ['default', 'p1'] },
    effects: [],
  },
];

describe('takeRoundInput: what a round hands the owner', () => {
  it.each(cases)('$name', ({ view, input, effects }) => {
    const decision = takeRoundInput(ownerView(view?.()), input);
    expect(decision.effects.map(effectLine)).toEqual(effects);
    expect(decision.settlements).toEqual([]);
  });
});
