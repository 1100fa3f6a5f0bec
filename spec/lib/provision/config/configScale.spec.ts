import { parseProvisionerConfig } from '../../../../lib/provision/config/config';

// The `rxfleet:` keys of issue 15: the helper mode, active-active, the claims bucket.
const parse = (text: string, cpus = 2) => parseProvisionerConfig(`helper: /usr/local/bin/helper\n${text}`, { cpus });
const problems = (text: string, cpus = 2) => parse(text, cpus).problems.map((p) => `${p.severity} ${p.path}: ${p.message}`);

describe('parseProvisionerConfig: helper mode, active-active and claims', () => {
  it('defaults: one instance, a helper per node, the claims bucket and prefix Choria-style', () => {
    const config = parse('workers: 16\n').config;
    expect(config?.rxfleet).toMatchObject({
      mode: 'single',
      helperMode: 'per-node',
      helperProcesses: 2,
      claimsBucket: 'RXFLEET_PROVISIONER_CLAIMS',
      claimsApiPrefix: 'choria.streams',
    });
  });

  it('helper_processes defaults to the worker count, at most one per CPU, at least one', () => {
    expect(parse('workers: 16\nrxfleet: {helper_mode: persistent}', 8).config?.rxfleet.helperProcesses).toBe(8);
    expect(parse('workers: 3\nrxfleet: {helper_mode: persistent}', 8).config?.rxfleet.helperProcesses).toBe(3);
    // workers: 0 is one per CPU, and so are the processes.
    expect(parse('rxfleet: {helper_mode: persistent}', 4).config?.rxfleet.helperProcesses).toBe(4);
    expect(parse('workers: 4\nrxfleet: {helper_mode: persistent, helper_processes: 3}').config?.rxfleet.helperProcesses).toBe(3);
  });

  it('reads every key, case-insensitively as the rest of the file', () => {
    const config = parse(
      'workers: 8\nrxfleet: {Mode: active-active, HELPER_MODE: persistent, helper_processes: 4, claims_bucket: SITE_CLAIMS, claims_api_prefix: $JS.API}',
    ).config;
    expect(config?.rxfleet).toMatchObject({
      mode: 'active-active',
      helperMode: 'persistent',
      helperProcesses: 4,
      claimsBucket: 'SITE_CLAIMS',
      claimsApiPrefix: '$JS.API',
    });
  });

  it('refuses a bad value with its path and what was expected', () => {
    expect(
      problems(
        'rxfleet: {mode: active-passive, helper_mode: forked, helper_processes: -1, claims_bucket: "a.b", claims_api_prefix: "x >"}',
      ),
    ).toEqual([
      'error rxfleet.mode: expected single or active-active, got "active-passive" (a string)',
      'error rxfleet.helper_mode: expected per-node or persistent, got "forked" (a string)',
      'error rxfleet.helper_processes: expected a whole number >= 0 (0: the worker count, at most one per CPU), got -1',
      'error rxfleet.claims_bucket: expected a JetStream KV bucket name (letters, digits, - and _), got "a.b" (a string)',
      'error rxfleet.claims_api_prefix: expected a JetStream API prefix such as choria.streams or $JS.API, got "x >" (a string)',
    ]);
  });

  it('active-active and leader_election together are refused: they are two ways of sharing one fleet', () => {
    expect(problems('leader_election: true\nrxfleet: {mode: active-active}')).toEqual([
      'error rxfleet.mode: active-active and leader_election are two ways of sharing one fleet: choose one (set leader_election: false for active-active)',
    ]);
    expect(problems('leader_election: true\nrxfleet: {mode: single}')).toEqual([]);
  });

  it('warns about more helper processes than workers: they would stand idle', () => {
    expect(problems('workers: 2\nrxfleet: {helper_mode: persistent, helper_processes: 5}')).toEqual([
      'warning rxfleet.helper_processes: 5 processes for 2 workers: at most one request per worker is in flight, so the others stand idle',
    ]);
    // Not when workers is itself refused, nor for the default.
    expect(problems('workers: -1\nrxfleet: {helper_processes: 5}').filter((p) => p.startsWith('warning'))).toEqual([]);
    expect(problems('workers: 1').filter((p) => p.startsWith('warning'))).toEqual([]);
  });
});
