/**
 * What a round hands the owner besides instance names, as pure functions of the owner's view and
 * the input: its projects and networks to read, what a listing no longer has, the wire map whole,
 * a listing refused, its end. The owner's apply carries the decision out.
 */
import { IncusApiError } from '../../incus/api';
import { servedByName } from '../model/servedProjects';
import { RoundSignal } from '../rounds/round';
import { RoundEnd, RoundRead } from '../rounds/roundFeed';
import { Decision, Effect, NOTHING, effectsOnly } from './effects';
import { projectUnserved } from './landings';
import { OwnerView } from './ownerState';

/**
 * A project or network to read (a list-mode project not listed is known unserved without a read,
 * and the round told so), a signal, or a round's end (handed on). A project or network from a
 * round abandoned for a newer one is not read.
 */
export function takeRoundInput(view: OwnerView, input: RoundRead | RoundSignal | RoundEnd): Decision {
  switch (input.kind) {
    case 'round-project': {
      const { round, name: project } = input;
      if (round.abandoned) return NOTHING;
      if (servedByName(view.projects, project) !== false) return effectsOnly([{ kind: 'read-project', project, round }]);
      return effectsOnly([
        ...projectUnserved(view, project),
        { kind: 'tell-round', round, landed: 'project', project, outcome: { status: 'unserved' } },
      ]);
    }
    case 'round-network': {
      const { round, owner, name } = input;
      return round.abandoned ? NOTHING : effectsOnly([{ kind: 'read-network', project: owner, owner, name, fanOut: 'if-changed', round }]);
    }
    case 'round-end':
      return effectsOnly([{ kind: 'notice', notice: input }]);
    default:
      return input.round.abandoned ? NOTHING : effectsOnly(roundSignal(view, input));
  }
}

/**
 * A round's signal. What a listing lacks is pruned against the keys the model held when the
 * listing went out (E5), so a name created meanwhile survives: a pruned instance leaves as an
 * `instance-deleted` of origin `prune`, a pruned project takes its instances out the same way
 * (E4), a pruned network goes silently. A listing that failed prunes nothing in its scope; one the
 * server refuses this client is warned about once, then at debug every round.
 */
export function roundSignal(view: OwnerView, signal: RoundSignal): Effect[] {
  const { round } = signal;
  switch (signal.kind) {
    case 'listed': {
      const effects: Effect[] = [];
      // Allowed again (the certificate changed): a later refusal is news, worth a warning.
      const what =
        signal.scope === 'networks'
          ? `networks of ${signal.owner}`
          : signal.scope === 'instances'
            ? `instances of ${signal.project}`
            : undefined;
      if (what !== undefined && view.forbiddenListings.has(what)) effects.push({ kind: 'listing', what, refused: false });
      const present = new Set(signal.listed);
      const gone = signal.recorded.filter((name) => !present.has(name));
      if (signal.scope === 'projects') {
        for (const project of gone) effects.push({ kind: 'prune-project', project });
      } else if (signal.scope === 'networks') {
        for (const name of gone) effects.push({ kind: 'drop-network', owner: signal.owner, name });
      } else {
        const { project } = signal;
        for (const name of gone)
          if (view.model.instance(project, name) !== undefined) effects.push({ kind: 'prune-instance', project, name });
      }
      return effects;
    }
    case 'networks-landed':
      return [{ kind: 'networks-ready' }];
    case 'listing-failed': {
      const { what, error } = signal;
      if (!(error instanceof IncusApiError && error.forbidden))
        return [
          {
            kind: 'log',
            level: 'warn',
            fields: { round: round.number, err: error },
            message: `listing ${what} failed: skipped this round, nothing pruned`,
          },
        ];
      // A certificate restricted to some projects may never list this: said once, not every round.
      const message = `listing ${what} is not allowed to this client (${error.message}): skipped in every round, nothing pruned; what its instances use is read by name`;
      const level = view.forbiddenListings.has(what) ? 'debug' : 'warn';
      return [
        { kind: 'listing', what, refused: true },
        { kind: 'log', level, fields: { round: round.number, what }, message },
      ];
    }
  }
}
