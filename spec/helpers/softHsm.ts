import { execFile } from 'node:child_process';
import type { webcrypto } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import 'reflect-metadata';
import { X509Certificate } from '@peculiar/x509';
import { issueForPublicKey } from './testCa';

const run = promisify(execFile);

/** Debian's softhsm2 module (the path go-choria's docs and sites name). */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
const TOKEN_OBJECTS = resolve(__dirname, '../fixtures/pkcs11/token-objects.mjs');

/** A SoftHSM token in a private directory: its own `softhsm2.conf`, removed by `remove()`. */
export interface SoftHsmToken {
  /** The directory holding the configuration and the token store. */
  readonly dir: string;
  /** `SOFTHSM2_CONF`: every process that opens the token needs it in its environment. */
  readonly env: { SOFTHSM2_CONF: string };
  readonly label: string;
  readonly pin: string;
  /** The slot SoftHSM moved the initialised token to (`plugin.security.pkcs11.slot`). */
  readonly slot: number;
  /** The RSA key generated on the token (never extractable), and a certificate for it issued by `ca`, both stored on the token. */
  addProvisionerCredentials(ca: { cert: string; key: string }, commonName: string): Promise<{ certificate: string }>;
  remove(): void;
}

/**
 * Makes a SoftHSM token (`softhsm2-util --init-token`) in a fresh temporary directory whose
 * `softhsm2.conf` points the token store there: nothing of the machine's own SoftHSM is touched.
 */
export async function createSoftHsmToken(options: { label?: string; pin?: string } = {}): Promise<SoftHsmToken> {
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-softhsm-'));
  try {
    const tokens = join(dir, 'tokens');
    mkdirSync(tokens);
    const conf = join(dir, 'softhsm2.conf');
    writeFileSync(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
    const env = { SOFTHSM2_CONF: conf };
    const label = options.label ?? 'provisioner';
    const pin = options.pin ?? '8642-pin';
    const { stdout } = await run('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', 'so-1357'], {
      env: { ...process.env, ...env },
    });
    const slot = /reassigned to slot (\d+)/.exec(stdout)?.[1];
    if (slot === undefined) throw new Error(`softhsm2-util did not say the token's slot: ${stdout}`);
    const objects = async (command: string, args: string[], input?: Buffer): Promise<string> => {
      const child = run(process.execPath, [TOKEN_OBJECTS, command, SOFTHSM_MODULE, slot, pin, label, ...args], {
        env: { ...process.env, ...env },
      });
      if (input !== undefined) child.child.stdin?.end(input);
      else child.child.stdin?.end();
      return (await child).stdout;
    };
    return {
      dir,
      env,
      label,
      pin,
      slot: Number(slot),
      async addProvisionerCredentials(ca, commonName) {
        const publicKey = JSON.parse(await objects('keypair', ['01'])) as webcrypto.JsonWebKey;
        const certificate = await issueForPublicKey(ca, commonName, publicKey, { dns: [commonName] });
        const der = Buffer.from(certificate.replace(/-----[^-]+-----/g, '').replace(/\s/g, ''), 'base64');
        const subject = Buffer.from(new X509Certificate(certificate).subjectName.toArrayBuffer()).toString('hex');
        await objects('certificate', ['01', subject], der);
        return { certificate };
      },
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
