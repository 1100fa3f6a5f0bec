import { firstValueFrom } from 'rxjs';
import { PROVISION_RPCS } from '../../../lib/choria/agents';
import { RpcTimeoutError } from '../../../lib/choria/errors';
import { x509RequestSigner } from '../../../lib/choria/requestSigner';
import { SiteFiles } from '../../../lib/siteFiles';
import { ChoriaWorld, startChoriaWorld } from '../../helpers/choria';
import { useNatsServer } from '../../helpers/nats';
import { TestCa, createTestCa } from '../../helpers/testCa';

const N1 = 'node-1.example.net';

// Servers whose provisioning JWT says chs: true (`rxfleet simulate --require-signed`): what they
// accept and what they drop, over a real nats-server.
describe('a simulated fleet that requires signed requests', () => {
  const server = useNatsServer({ jetstream: false });
  let ca: TestCa;
  let world: ChoriaWorld;
  let files: SiteFiles;

  beforeAll(async () => {
    ca = await createTestCa();
    const client = await ca.issue('prov.mcollective');
    const contents: Record<string, string> = { '/c.pem': client.cert, '/k.pem': client.key };
    files = { read: (path) => Buffer.from(contents[path]), exists: (path) => path in contents };
    world = await startChoriaWorld(server().url, { nodes: 1, requireSigned: { caPem: ca.cert } }, { callerId: 'choria=prov.mcollective' });
  }, 30_000);
  afterAll(() => world.stop());

  it('says chs: true in its provisioning JWT', () => {
    expect(world.fleet.keys.claims.chs).toBe(true);
  });

  it('answers a request signed by a certificate of its CA', async () => {
    const signed = world.newClient({
      callerId: 'choria=prov.mcollective',
      protocol: { version: 'v1', signer: x509RequestSigner(files, { certificate: '/c.pem', key: '/k.pem' }) },
    });
    const reply = await firstValueFrom(signed.call(PROVISION_RPCS.inventory, N1, {}, { timeoutMs: 2000 }));
    expect(reply.statuscode).toBe(0);
    expect(world.fleet.stats().signatureRefusals).toBe(0);
  });

  it('drops an unsigned request unanswered and counts it, as a go-choria server with chs: true does', async () => {
    const before = world.fleet.stats().signatureRefusals;
    const requestsBefore = world.fleet.stats().requests;
    await expect(firstValueFrom(world.client.call(PROVISION_RPCS.inventory, N1, {}, { timeoutMs: 500 }))).rejects.toBeInstanceOf(
      RpcTimeoutError,
    );
    expect(world.fleet.stats().signatureRefusals).toBe(before + 1);
    expect(world.fleet.stats().requests).toBe(requestsBefore);
  });
});
