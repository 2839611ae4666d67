/** @type {import('jest').Config} */
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testTimeout: 180000,
};

module.exports = {
  projects: [
    // Pure logic and files: no stack and no host tool, so `npm run test:unit` is the edit-test loop.
    { ...common, displayName: 'unit', roots: ['<rootDir>/test/unit'], testMatch: ['**/*.test.ts'] },
    // Unit-sized tests that need a host tool (promtool) or the stack's cached temporal CLI, but no running stack.
    { ...common, displayName: 'host', roots: ['<rootDir>/test/host'], testMatch: ['**/*.test.ts'] },
    {
      // Real Kafka and real Temporal. The global setup runs only when a test of this project is selected.
      ...common,
      displayName: 'integration',
      roots: ['<rootDir>/test'],
      testMatch: ['<rootDir>/test/it_*.test.ts'],
      globalSetup: '<rootDir>/test/support/globalSetup.ts',
      globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
    },
  ],
  // One broker and one dev server on 2 cores: test files run one at a time so a fault test's broker restart
  // never lands in a neighbour's middle.
  maxWorkers: 1,
  testTimeout: 180000,
  verbose: true,
};
