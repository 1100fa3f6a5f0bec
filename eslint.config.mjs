import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import jest from 'eslint-plugin-jest';

export default tseslint.config(
  { ignores: ['dist/**', '*/dist/**', 'node_modules/**', 'coverage/**', 'jest.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'off',
    },
  },
  {
    files: ['spec/**/*.ts'],
    ...jest.configs['flat/recommended'],
    rules: {
      ...jest.configs['flat/recommended'].rules,
      'jest/no-focused-tests': 'error',
      'jest/no-disabled-tests': 'error',
      // Property tests and table-driven specs assert inside loops and branches on purpose.
      'jest/no-conditional-expect': 'off',
      'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*', '*.expect*', 'assert*'] }],
    },
  },
  {
    files: ['operators/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['../lib/*', '../streams/*', '../bin/*'], message: 'operators/ knows no domain and no I/O' },
          { group: ['rxjs/internal/*'], message: 'not public API in RxJS 7' },
        ],
        paths: ['nats', 'ws', 'pino', 'prom-client', 'fs', 'net', 'http', 'child_process'],
      }],
    },
  },
);
