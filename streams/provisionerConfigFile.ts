import { existsSync, readFileSync } from 'node:fs';
import { ParseConfigOptions, ProvisionerConfigResult, parseProvisionerConfig } from '../lib/provision/config';

/** Reads `file` and parses it with {@link parseProvisionerConfig}; an unreadable file is one error. */
export function loadProvisionerConfig(file: string, options: Omit<ParseConfigOptions, 'file'> = {}): ProvisionerConfigResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message = code === 'ENOENT' ? `file ${file} not found` : code === 'EISDIR' ? `${file} is a directory` : `config file could not be read: ${(e as Error).message}`;
    return { config: undefined, problems: [{ path: file, message, severity: 'error' }] };
  }
  return parseProvisionerConfig(text, { exists: existsSync, ...options, file });
}
