/**
 * The dev stack and the tools import the product as `poimen-relay/internal/<module>` (tsconfig.json says why);
 * under jest that is the source under src/, the very file the tests import by relative path, so a module is
 * loaded once, needs no build, and jest.mock of it reaches the dev stack too. The tools import the dev stack as
 * `#devstack/<module>` (package.json's `imports`), mapped to the source under devstack/ for the same reasons.
 * jest.cluster.config.js maps both the same way.
 */
const { ALONE, testWorkers } = require('./test/support/servicesChoice');

const INTERNAL = {
  '^poimen-relay/internal/(.*)$': '<rootDir>/src/$1',
  '^#devstack/(.*)$': '<rootDir>/devstack/$1',
};

/** @type {import('jest').Config} */
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  moduleNameMapper: INTERNAL,
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
      // Those that need the machine to themselves run after, one at a time: jest.alone.config.js.
      testPathIgnorePatterns: ['/node_modules/', ...ALONE.map((f) => `^${f.replaceAll('.', '\\.')}$`)],
      // Each jest worker on a local stack of its own (test/support/workerStack.ts).
      testEnvironment: '<rootDir>/test/support/stackEnvironment.ts',
      globalSetup: '<rootDir>/test/support/globalSetup.ts',
      globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
    },
  ],
  // One file per worker at a time, a worker per core; an integration file on its worker's own stack, so a fault
  // test's broker restart never lands in a neighbour's middle. One worker where the services are a single set
  // (test/support/servicesChoice.js).
  maxWorkers: testWorkers(),
  testTimeout: 180000,
  verbose: true,
};
