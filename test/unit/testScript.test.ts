/**
 * `npm test` (scripts/test.js): jest with files side by side, then the files that need the machine to themselves
 * (jest.alone.config.js), with the caller's arguments in both, and the second only where integration is selected.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ALONE } from '../support/servicesChoice';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { plan } = require('../../scripts/test.js') as { plan: (argv: string[]) => string[][] };

const ALONE_RUN = ['-c', 'jest.alone.config.js', '--passWithNoTests'];

test('plain npm test: both runs', () => {
  expect(plan([])).toEqual([['--passWithNoTests'], ALONE_RUN]);
});

test('a file pattern goes to both runs, so an alone file is found by it too', () => {
  expect(plan(['--testPathPatterns', 'it_retry_after'])).toEqual([
    ['--passWithNoTests', '--testPathPatterns', 'it_retry_after'],
    [...ALONE_RUN, '--testPathPatterns', 'it_retry_after'],
  ]);
});

test('projects without integration: no second run; with it: the second without the selection', () => {
  expect(plan(['--selectProjects', 'unit', 'host'])).toEqual([
    ['--passWithNoTests', '--selectProjects', 'unit', 'host'],
  ]);
  expect(plan(['--selectProjects', 'unit', 'integration', '-t', 'x'])).toEqual([
    ['--passWithNoTests', '--selectProjects', 'unit', 'integration', '-t', 'x'],
    [...ALONE_RUN, '-t', 'x'],
  ]);
});

test('the alone files exist and are integration files', () => {
  for (const f of ALONE) expect(f).toMatch(/^<rootDir>\/test\/it_[a-z_]+\.test\.ts$/);
  const root = path.join(__dirname, '..', '..');
  expect(ALONE.filter((f) => !fs.existsSync(f.replace('<rootDir>', root)))).toEqual([]);
});
