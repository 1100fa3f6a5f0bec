/**
 * What the owner does with what a round hands it besides instance names: read its projects and
 * networks, prune what a listing no longer has, warm once the wire map is whole, count its end.
 */
import { IncusApiError } from '../../incus/api';
import { newEvent } from '../model/event';
import type { Owner } from './ownerParts';
import { RoundSignal } from '../rounds/round';
import { RoundEnd, RoundRead } from '../rounds/roundFeed';
import { servedByName } from '../model/servedProjects';

/**
 * Takes a project or network to read (a list-mode project not listed is known unserved without a
 * read), a signal, or a round's end. A project or network from a round abandoned for a newer one
 * is not read.
 */
export function takeRoundInput(owner: Owner, input: RoundRead | RoundSignal | RoundEnd): void {
  switch (input.kind) {
    case 'round-project':
      if (input.round.abandoned) return;
      if (servedByName(owner.config.projects, input.name) === false) owner.projectUnserved(input.name, input.round);
      else owner.readProject(input.name, input.round);
      return;
    case 'round-network':
      if (!input.round.abandoned) owner.readNetwork(input.owner, input.owner, input.name, { fanOut: 'if-changed', round: input.round });
      return;
    case 'round-end':
      owner.notify(input);
      return;
    default:
      applyRoundSignal(owner, input);
  }
}

/**
 * Applies `signal` unless its round was abandoned for a newer one. What a listing lacks is pruned
 * against the keys the model held when the listing went out (E5), so a name created meanwhile
 * survives: a pruned instance leaves as an `instance-deleted` of origin `prune`, a pruned project
 * takes its instances out the same way (E4), a pruned network goes silently. A listing that
 * failed prunes nothing in its scope.
 */
export function applyRoundSignal(owner: Owner, signal: RoundSignal): void {
  const { round } = signal;
  if (round.abandoned) return;
  const { model, config } = owner;
  switch (signal.kind) {
    case 'listed': {
      // Allowed again (the certificate changed): a later refusal is news, worth a warning.
      if (signal.scope === 'networks') owner.forbiddenListings.delete(`networks of ${signal.owner}`);
      if (signal.scope === 'instances') owner.forbiddenListings.delete(`instances of ${signal.project}`);
      const present = new Set(signal.listed);
      const gone = signal.recorded.filter((name) => !present.has(name));
      if (signal.scope === 'projects') {
        for (const project of gone) owner.pruneProject(project);
      } else if (signal.scope === 'networks') {
        for (const name of gone) model.deleteNetwork(signal.owner, name);
      } else {
        const { project } = signal;
        for (const name of gone) {
          if (model.instance(project, name) !== undefined)
            owner.accept(newEvent({ action: 'instance-deleted', project, name, origin: 'prune', received: config.scheduler.now() }));
        }
      }
      return;
    }
    case 'networks-landed':
      owner.networksReady = true;
      owner.maybeWarm();
      return;
    case 'listing-failed': {
      if (!(signal.error instanceof IncusApiError && signal.error.forbidden)) {
        config.logger.warn({ round: round.number, err: signal.error }, `listing ${signal.what} failed: skipped this round, nothing pruned`);
        return;
      }
      // A certificate restricted to some projects may never list this: said once, not every round.
      const first = !owner.forbiddenListings.has(signal.what);
      owner.forbiddenListings.add(signal.what);
      const message = `listing ${signal.what} is not allowed to this client (${signal.error.message}): skipped in every round, nothing pruned; what its instances use is read by name`;
      if (first) config.logger.warn({ round: round.number, what: signal.what }, message);
      else config.logger.debug({ round: round.number, what: signal.what }, message);
      return;
    }
  }
}
