/**
 * The unit project alone, for mutation testing (stryker.config.mjs): the same transform and roots as the `unit`
 * project of jest.config.js, without the integration project, whose global setup starts a real stack.
 */
const base = require('./jest.config.js');

const unit = base.projects.find((p) => p.displayName === 'unit');
if (!unit) throw new Error('jest.config.js has no `unit` project');

/** @type {import('jest').Config} */
module.exports = {
  ...unit,
  displayName: undefined,
  maxWorkers: 1,
};
