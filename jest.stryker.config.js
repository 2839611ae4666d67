/**
 * The unit project alone, for mutation testing (stryker.config.mjs): the same transform and roots as the `unit`
 * project of jest.config.js, without the integration project, whose global setup starts a real stack.
 */
const base = require('./jest.config.js');

const unit = base.projects.find((p) => p.displayName === 'unit');
if (!unit) throw new Error('jest.config.js has no `unit` project');

/**
 * Left out, because it cannot judge a mutant in Stryker's sandbox (a copy of the project without .git):
 * - image: reads the build context through git.
 * dispatchWorkflow.test.ts, in the `host` project (it needs the stack's temporal CLI), is not run either: it runs
 * the workflow in Temporal's workflow sandbox from a webpack bundle of the instrumented code, where the
 * instrumentation does not hold (in the initial run, with no mutant active, small inputs took the large-input
 * branch); its workflow's mutants are judged by replay.test.ts and the workflow's helpers' tests.
 */
const LEFT_OUT = ['/test/unit/image\\.test\\.ts$'];

/** @type {import('jest').Config} */
module.exports = {
  ...unit,
  displayName: undefined,
  // test/support too: jest follows a test's imports to the mutated file only through files under its roots, so a
  // test that reaches src/ through a helper there (test/support/visibilityFake.ts) was never run for a mutant.
  roots: [...unit.roots, '<rootDir>/test/support'],
  testPathIgnorePatterns: ['/node_modules/', ...LEFT_OUT],
  maxWorkers: 1,
};
