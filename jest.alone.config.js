/**
 * The integration files that need the machine to themselves (test/support/servicesChoice.js, ALONE): `npm test`
 * runs them after every other file, one at a time, on the same local stack and global setup as the integration
 * project (scripts/test.js).
 * @type {import('jest').Config}
 */
const { projects, testTimeout, verbose } = require('./jest.config.js');
const { ALONE } = require('./test/support/servicesChoice');

const integration = projects.find((p) => p.displayName === 'integration');
if (!integration)
  throw new Error("jest.config.js has no 'integration' project for the alone files to run as");

module.exports = {
  ...integration,
  displayName: 'integration-alone',
  testMatch: ALONE,
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
  testTimeout,
  verbose,
};
