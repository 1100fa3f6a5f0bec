import { SiteFiles } from '../../lib/siteFiles';

/** Where the token's PIN comes from: a file, the terminal, or nowhere. */
export type Pkcs11PinSource = { kind: 'file'; file: string } | { kind: 'terminal' } | { kind: 'none' };

/** The PIN source for this process: `rxfleet.pkcs11_pin_file` when set, else the terminal when stdin is one. */
export function pkcs11PinSource(pinFile: string | undefined, stdinIsTerminal: boolean = process.stdin.isTTY === true): Pkcs11PinSource {
  if (pinFile !== undefined) return { kind: 'file', file: pinFile };
  return stdinIsTerminal ? { kind: 'terminal' } : { kind: 'none' };
}

/** Why no PIN can be had: the one line a daemon without a terminal and without a PIN file starts with. */
export const NO_PIN_SOURCE =
  "the pkcs11 security provider needs the token's PIN: go-choria asks for it on the terminal, and rxfleet has no terminal here (stdin is not one): set rxfleet.pkcs11_pin_file to a file holding it";

/**
 * The PIN from a file: its content without the line end a text editor or `echo` leaves. An empty
 * file, or one that cannot be read, throws a line naming the file (never its content).
 */
export function readPinFile(files: SiteFiles, file: string): string {
  let text: string;
  try {
    text = files.read(file).toString('utf8');
  } catch (error) {
    throw new Error(`rxfleet.pkcs11_pin_file: cannot read ${JSON.stringify(file)}: ${(error as Error).message}`);
  }
  const pin = text.replace(/\r?\n$/, '');
  if (pin === '') throw new Error(`rxfleet.pkcs11_pin_file: ${JSON.stringify(file)} is empty`);
  return pin;
}

/** The terminal the PIN is asked on: stdin in raw mode, the prompt on stderr (stdout carries the log). */
export interface PinTerminal {
  input: NodeJS.ReadStream;
  output: NodeJS.WritableStream;
}

/**
 * Asks for the PIN on the terminal as go-choria's provider does (a `PIN` password prompt): nothing
 * is echoed; Enter ends it, Backspace takes a character back, Ctrl-C or Ctrl-D before Enter
 * refuses to go on. The terminal is left as it was found.
 */
export function promptForPin(terminal: PinTerminal = { input: process.stdin, output: process.stderr }): Promise<string> {
  const { input, output } = terminal;
  return new Promise((resolve, reject) => {
    let pin = '';
    const wasRaw = input.isRaw;
    const finish = (error: Error | undefined): void => {
      input.off('data', onData);
      input.setRawMode(wasRaw);
      input.pause();
      output.write('\n');
      if (error === undefined) resolve(pin);
      else reject(error);
    };
    const onData = (chunk: Buffer | string): void => {
      for (const c of chunk.toString('utf8')) {
        if (c === '\r' || c === '\n') return finish(undefined);
        if (c === '\u0003' || c === '\u0004') return finish(new Error('no PIN was entered for the pkcs11 security provider'));
        if (c === '\u007f' || c === '\b') pin = pin.slice(0, -1);
        else pin += c;
      }
    };
    output.write('? PIN ');
    input.setRawMode(true);
    input.on('data', onData);
    input.resume();
  });
}

/** The PIN from `source`: read from the file, asked on the terminal, or refused with {@link NO_PIN_SOURCE}. */
export async function pkcs11Pin(source: Pkcs11PinSource, files: SiteFiles): Promise<string> {
  if (source.kind === 'file') return readPinFile(files, source.file);
  if (source.kind === 'terminal') return promptForPin();
  throw new Error(NO_PIN_SOURCE);
}
