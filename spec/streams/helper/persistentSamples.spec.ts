import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildHelperInput } from '../../../lib/provision/helper/helperInput';
import { PersistentHelper } from '../../../streams/helper/persistentHelper';
import { SAMPLE_HELPERS } from '../../helpers/provisioner';

// The persistent sample helpers shipped in examples/helpers, run as the daemon runs them.
describe.each([
  ['persistent-helper.mjs', '#!/usr/bin/env node'],
  ['persistent-helper.sh', '#!/bin/sh'],
])('the sample %s', (file, shebang) => {
  const path = join(SAMPLE_HELPERS, file);
  const helpers: PersistentHelper[] = [];
  const start = (closeGraceMs = 2000): PersistentHelper => {
    const helper = new PersistentHelper({
      command: path,
      processes: 1,
      timeoutMs: 5000,
      closeGraceMs,
      env: { ...process.env, RXFLEET_HELPER_BROKERS: 'nats://b1:4222,nats://b2:4222' },
    });
    helpers.push(helper);
    return helper;
  };
  afterEach(async () => {
    await Promise.all(helpers.splice(0).map((h) => h.close()));
  });

  it('is an executable script', () => {
    expect(() => accessSync(path, constants.X_OK)).not.toThrow();
    expect(readFileSync(path, 'utf8').split('\n')[0]).toBe(shebang);
  });

  it('configures each node out of provisioning mode, answering many requests in one process', async () => {
    const helper = start();
    const identities = Array.from({ length: 50 }, (_, i) => `n${i}.example.net`);
    const answers = await Promise.all(
      identities.map((identity) =>
        helper.run(buildHelperInput({ identity, inventory: { facts: { identity: 'not-this' }, version: '0.29.4' } })),
      ),
    );
    answers.forEach((answer, i) => {
      expect(answer).toMatchObject({ defer: false, msg: `configured ${identities[i]}` });
      expect(answer.configuration).toEqual({
        identity: identities[i],
        'plugin.choria.server.provision': 'false',
        'plugin.choria.middleware_hosts': 'nats://b1:4222,nats://b2:4222',
        loglevel: 'info',
      });
    });
    expect(helper.running()).toBe(1);
  });

  it('defers a request without an identity it can use', async () => {
    const answer = await start().run(buildHelperInput({ identity: '' }));
    expect(answer.defer).toBe(true);
  });

  it('exits when its stdin ends', async () => {
    // Nothing is killed before the test's own timeout: close() resolves only because the helper exits.
    const helper = start(10 * 60_000);
    await helper.run(buildHelperInput({ identity: 'n1.example.net' }));
    await helper.close();
    expect(helper.running()).toBe(0);
  });
});
