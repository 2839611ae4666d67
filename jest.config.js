/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  // Integration suites share one Kafka broker and one Temporal dev server (2 cores here):
  // running them one file at a time keeps fault tests (broker restarts) from hitting their neighbours.
  maxWorkers: 1,
  testTimeout: 120000,
  verbose: true,
};
