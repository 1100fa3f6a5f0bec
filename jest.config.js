/** Jest runs the TypeScript specs through SWC; type-checking is `npm run lint`'s job. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/spec'],
  testMatch: ['**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' } }],
  },
  moduleNameMapper: {
    // The kit's sources import each other as the ES modules they compile to (`./admit.js`).
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^rxfleet$': '<rootDir>/index.ts',
    '^@rxfleet/operators$': '<rootDir>/operators/index.ts',
    '^@rxfleet/operators/testing$': '<rootDir>/operators/testing/index.ts',
  },
  testTimeout: 30000,
  // A scratch directory for the run (the LXD test image is built into it once), removed at the end.
  globalSetup: '<rootDir>/spec/helpers/runDirSetup.ts',
  globalTeardown: '<rootDir>/spec/helpers/runDirTeardown.ts',
};
