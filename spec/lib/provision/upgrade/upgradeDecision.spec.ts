import { UpgradeInput, decideUpgrade, releaseUpdateError, upgradeFailed } from '../../../../lib/provision/upgrade/upgradeDecision';

const base: UpgradeInput = {
  enabled: true,
  target: '0.29.0',
  repository: 'https://repo.example.net/choria',
  optional: false,
  currentVersion: '0.28.0',
  upgradable: true,
};

describe('decideUpgrade (handleHostUpgrade)', () => {
  it.each([
    ['the feature is off', { enabled: false }, { action: 'none' }],
    ['the helper asked for no version', { target: '' }, { action: 'none' }],
    ['the node runs the target already (#188)', { currentVersion: '0.29.0' }, { action: 'current', version: '0.29.0' }],
    ['the node is older', {}, { action: 'update', from: '0.28.0', to: '0.29.0', direction: 'upgrade' }],
    [
      'the node is newer: downgrades are allowed (#210)',
      { currentVersion: '0.29.6', target: '0.28.4' },
      { action: 'update', from: '0.29.6', to: '0.28.4', direction: 'downgrade' },
    ],
    [
      'the versions differ only in release',
      { currentVersion: '0.29.0-1', target: '0.29.0-2' },
      { action: 'update', from: '0.29.0-1', to: '0.29.0-2', direction: 'upgrade' },
    ],
    [
      'there is no repository and upgrades are not optional',
      { repository: '' },
      { action: 'failed', error: 'updates_repository not configured for upgrades feature' },
    ],
    ['the inventory had no version', { currentVersion: '' }, { action: 'failed', error: 'did not receive a version in inventory' }],
    ['the node is not upgradable', { upgradable: false }, { action: 'failed', error: 'does not support upgrades' }],
  ])('when %s', (_when, change, decision) => {
    expect(decideUpgrade({ ...base, ...change })).toEqual(decision);
  });

  it('a missing repository is not a failure when upgrades are optional', () => {
    expect(decideUpgrade({ ...base, repository: '', optional: true }).action).toBe('update');
  });
});

describe('upgradeFailed', () => {
  it('optional: warn and carry on to configure', () => {
    expect(upgradeFailed('does not support upgrades', '0.29.0', true)).toEqual({
      continue: true,
      message: 'Could not upgrade to 0.29.0, continuing: does not support upgrades',
    });
  });

  it('not optional: the cycle fails with the error', () => {
    const error = releaseUpdateError('0.29.0', 'choria_provision#release_update failed: rolled back');
    expect(upgradeFailed(error, '0.29.0', false)).toEqual({
      continue: false,
      error: 'update to 0.29.0 failed: choria_provision#release_update failed: rolled back',
    });
  });
});
