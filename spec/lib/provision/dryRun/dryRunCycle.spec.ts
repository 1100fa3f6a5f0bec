import { Observable, firstValueFrom } from 'rxjs';
import { ActionSpec, PROVISION_RPCS } from '../../../../lib/choria/agents';
import { RpcTimeoutError } from '../../../../lib/choria/errors';
import { parseProvisionerConfig, requireValidConfig } from '../../../../lib/provision/config/config';
import { CycleRpcClient } from '../../../../lib/provision/cycle/cycleOptions';
import { DryRunCycle, DryRunRefusal, readOnlyClient } from '../../../../lib/provision/dryRun/dryRunCycle';
import { standInKeys } from '../../../../lib/provision/dryRun/standIns';
import { HelperInput } from '../../../../lib/provision/helper/helperInput';
import { HelperResponse } from '../../../../lib/provision/helper/helperResponse';
import { nodeSiteFiles } from '../../../../streams/siteFiles';

/** A node answering inventory (or never), every RPC it is sent noted. */
function node(inventory: Record<string, unknown> | 'silent' = { version: '0.29.4', upgradable: true }) {
  const sent: string[] = [];
  const client: CycleRpcClient = {
    call<I extends object, O>(spec: ActionSpec<I, O>, identity: string) {
      sent.push(spec.rpc);
      return new Observable<{ data: O; statuscode: number; statusmsg: string }>((subscriber) => {
        if (inventory === 'silent') return subscriber.error(new RpcTimeoutError(spec.rpc, identity, 5));
        subscriber.next({ data: inventory as O, statuscode: 0, statusmsg: 'OK' });
        subscriber.complete();
      });
    },
  };
  return { client, sent };
}

const answer = (response: Partial<HelperResponse>) => {
  const inputs: HelperInput[] = [];
  return {
    inputs,
    run: async (input: HelperInput): Promise<HelperResponse> => {
      inputs.push(input);
      return {
        defer: false,
        shutdown: false,
        msg: '',
        configuration: { 'plugin.choria.server.provision': 'false', identity: input.identity },
        actionPolicies: {},
        opaPolicies: {},
        certificate: '',
        ca: '',
        key: '',
        ssldir: '',
        serverClaims: undefined,
        upgrade: '',
        ...response,
      };
    },
  };
};

const config = (yaml = '') => requireValidConfig(parseProvisionerConfig(`helper: /bin/true\ntoken: s3cret\n${yaml}`));
const rehearse = (c: ReturnType<typeof config>, client: CycleRpcClient, helper: ReturnType<typeof answer>) =>
  new DryRunCycle({ config: c, client, helper, files: nodeSiteFiles, standIns: standInKeys(), backoffMs: [1], random: () => 0 });

describe('readOnlyClient', () => {
  it('lets inventory through and refuses every choria_provision action before it reaches the client', async () => {
    const { client, sent } = node();
    const guarded = readOnlyClient(client);
    for (const spec of Object.values(PROVISION_RPCS)) {
      const call = firstValueFrom(guarded.call(spec as ActionSpec<object, object>, 'n1', {}));
      if (spec.rpc === 'rpcutil#inventory') await expect(call).resolves.toBeDefined();
      else await expect(call).rejects.toBeInstanceOf(DryRunRefusal);
    }
    expect(sent).toEqual(['rpcutil#inventory']);
  });
});

describe('DryRunCycle', () => {
  it('pki: the helper gets a stand-in CSR for the node, and only the inventory is asked', async () => {
    const { client, sent } = node();
    const helper = answer({});
    const report = await rehearse(config('features: {pki: true}\n'), client, helper).report('n1.example.net');
    expect(report).toMatchObject({ would: 'configure', node: 'n1.example.net', inventory: { version: '0.29.4', upgradable: true } });
    expect(helper.inputs[0].csr?.csr).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    expect(sent).toEqual(['rpcutil#inventory']);
  });

  it('says what the cycle would do: defer, shut down, upgrade, or fail where it would stop', async () => {
    const c = config('features: {upgrades: true}\nupgrades_repository: https://repo.example.net\n');
    expect(await rehearse(c, node().client, answer({ defer: true, msg: 'CA busy' })).report('n1')).toMatchObject({
      would: 'defer',
      decision: { kind: 'defer', msg: 'CA busy' },
    });
    expect(await rehearse(c, node().client, answer({ shutdown: true })).report('n1')).toMatchObject({ would: 'shutdown' });
    expect(await rehearse(c, node().client, answer({ upgrade: '0.30.0' })).report('n1')).toMatchObject({
      would: 'upgrade',
      upgrade: { from: '0.29.4', to: '0.30.0' },
    });
    expect(await rehearse(c, node().client, answer({ configuration: {} })).report('n1')).toMatchObject({
      would: 'fail',
      error: { step: 'configure', message: 'configuration failed: empty configuration' },
    });
    const failing = { run: () => Promise.reject(new Error('could not wait for helper: exit status 1')) };
    expect(await rehearse(c, node().client, failing as never).report('n1')).toMatchObject({
      would: 'fail',
      error: { step: 'helper', message: 'could not wait for helper: exit status 1' },
    });
    expect(await rehearse(c, node('silent').client, answer({})).report('n1')).toMatchObject({
      would: 'fail',
      error: { step: 'inventory' },
    });
  });

  it('warns of a configuration that would leave the node in provisioning mode', async () => {
    const report = await rehearse(config(), node().client, answer({ configuration: { identity: 'n1' } })).report('n1');
    expect(report.would).toBe('configure');
    expect(report.notes).toEqual([expect.stringMatching(/does not set plugin\.choria\.server\.provision=false/)]);
  });
});
