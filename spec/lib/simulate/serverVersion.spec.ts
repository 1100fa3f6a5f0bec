import { sentEdchPublic } from '../../../lib/simulate/serverAgents';

describe('simulated servers before 0.23', () => {
  it('answer jwt with edch_public, as go-choria did before 0.23; later ones with ecdh_public', () => {
    expect(['0.22.0', '0.21.1', 'v0.22.3'].map(sentEdchPublic)).toEqual([true, true, true]);
    expect(['0.23.0', '0.29.4', '1.0.0', 'unknown'].map(sentEdchPublic)).toEqual([false, false, false, false]);
  });
});
