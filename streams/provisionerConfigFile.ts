import { existsSync, readFileSync } from 'node:fs';
import { ParseConfigOptions, ProvisionerConfigResult, parseProvisionerConfig } from '../lib/provision/config/config';
import { MachineLimits, workerLimitProblems } from '../lib/provision/config/workerLimit';
import { machineLimits } from './machineLimits';

/**
 * Reads `file` and parses it with {@link parseProvisionerConfig}; an unreadable file is one error.
 * A `workers` past what this machine can run (`limits`) is a warning.
 */
export function loadProvisionerConfig(
  file: string,
  options: Omit<ParseConfigOptions, 'file'> = {},
  limits: MachineLimits = machineLimits(),
): ProvisionerConfigResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message =
      code === 'ENOENT'
        ? `file ${file} not found`
        : code === 'EISDIR'
          ? `${file} is a directory`
          : `config file could not be read: ${(e as Error).message}`;
    return { config: undefined, problems: [{ path: file, message, severity: 'error' }] };
  }
  const result = parseProvisionerConfig(text, { exists: existsSync, ...options, file });
  // What the file asks of this machine: `validate` and `provision` both say it (issue 14 item 7).
  if (result.config !== undefined) result.problems.push(...workerLimitProblems(result.config.workers, limits));
  return result;
}
