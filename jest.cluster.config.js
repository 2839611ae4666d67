/**
 * `npm run test:cluster`: the relay on the production topology (the stack's cluster profile: PostgreSQL, the
 * real Temporal server with 8 history shards, three Kafka brokers), with node kills. Its own global setup brings
 * the cluster up; not part of `npm test` (CI runs it after).
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  // `poimen-relay/internal/<module>` is the source under src/ and `#devstack/<module>` the source under devstack/,
  // as in jest.config.js (why: there).
  moduleNameMapper: {
    '^poimen-relay/internal/(.*)$': '<rootDir>/src/$1',
    '^#devstack/(.*)$': '<rootDir>/devstack/$1',
  },
  displayName: 'cluster',
  roots: ['<rootDir>/test/cluster'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/cluster/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/cluster/support/globalTeardown.ts',
  // One cluster on 2 cores: the files kill its nodes, so they run one at a time.
  maxWorkers: 1,
  testTimeout: 600000,
  verbose: true,
};
