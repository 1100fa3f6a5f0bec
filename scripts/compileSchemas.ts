// Writes each configuration schema's validator as code (ajv's standalone output), so that a command
// starts without loading ajv's compiler or compiling the schema: that compile was most of
// `rxfleet validate`'s start above Node's own. `node --import tsx scripts/compileSchemas.ts`
// rewrites the files; spec/scripts/compileSchemas.spec.ts fails while one is not what its schema
// gives now, so a schema cannot change without its validator.
import Ajv, { type Options } from 'ajv';
import addFormats, { type FormatName } from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PROVISIONER_CONFIG_SCHEMA } from '../lib/provision/config/configSchema';

/** One validator to write: its schema, the ajv options it is compiled with, and where it goes. */
export interface CompiledSchema {
  /** The repository path of the file written. */
  readonly file: string;
  /** Where the schema comes from, named in the file's header. */
  readonly source: string;
  readonly schema: object;
  readonly options: Options;
  /** The formats of ajv-formats the schema uses. */
  readonly formats: readonly FormatName[];
  /** Keywords that only annotate (read back from the schema by the error messages). */
  readonly annotations: readonly string[];
}

export const COMPILED_SCHEMAS: readonly CompiledSchema[] = [
  {
    file: 'lib/provision/config/configValidator.generated.ts',
    source: 'PROVISIONER_CONFIG_SCHEMA (lib/provision/config/configSchema.ts)',
    schema: PROVISIONER_CONFIG_SCHEMA,
    // verbose: each error carries the value and the schema it is about, for "expected X, got Y".
    options: { allErrors: true, useDefaults: true, strict: true, verbose: true },
    formats: ['uri'],
    annotations: ['expected', 'secret'],
  },
];

const ROOT = resolve(__dirname, '..');

/** The text of `target`'s file: a header, then ajv's standalone code as an ES module. */
export function compiledSchemaText(target: CompiledSchema): string {
  const ajv = new Ajv({ ...target.options, code: { source: true, esm: true } });
  addFormats(ajv, [...target.formats]);
  ajv.addVocabulary([...target.annotations]);
  const code = standaloneCode(ajv, ajv.compile(target.schema));
  return [
    '// @ts-nocheck',
    '/* eslint-disable */',
    `// Written by scripts/compileSchemas.ts from ${target.source}, with ajv ${JSON.stringify(target.options)}:`,
    '// do not edit; run `node --import tsx scripts/compileSchemas.ts` after changing the schema.',
    code,
    '',
  ].join('\n');
}

if (require.main === module) {
  for (const target of COMPILED_SCHEMAS) {
    writeFileSync(join(ROOT, target.file), compiledSchemaText(target));
    console.log(`wrote ${target.file}`);
  }
}
