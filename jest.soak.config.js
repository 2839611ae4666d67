/**
 * `npm run test:soak`: the soaks, tests whose point is volume or duration (test/soak/). They run on the same real
 * Kafka and Temporal as the integration project, with its global setup, but are not part of `npm test`, so CI stays
 * within its time: run them before a release and after a change to the ingester's batching, admission or memory.
 * @type {import('jest').Config}
 */
const { projects, testTimeout, verbose } = require('./jest.config.js');

const integration = projects.find((p) => p.displayName === 'integration');
if (!integration) throw new Error("jest.config.js has no 'integration' project for the soaks to run as");

module.exports = {
  ...integration,
  displayName: 'soak',
  roots: ['<rootDir>/test/soak'],
  testMatch: ['**/*.test.ts'],
  // One stack on 2 cores, as in `npm test`.
  maxWorkers: 1,
  testTimeout,
  verbose,
};
