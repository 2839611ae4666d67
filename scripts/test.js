#!/usr/bin/env node
'use strict';
// `npm test`'s jest: every project with files side by side (jest.config.js), then the integration files that need
// the machine to themselves, one at a time (jest.alone.config.js). Arguments go to both runs; a --selectProjects
// without `integration` skips the second. Both always run; exits non-zero when either fails.
const { spawnSync } = require('node:child_process');

/** The two jest runs for `npm test -- <argv>`: each one's arguments, the second left out when not selected. */
function plan(argv) {
  const at = argv.indexOf('--selectProjects');
  const rest = at < 0 ? [] : argv.slice(at + 1);
  const end = rest.findIndex((a) => a.startsWith('-'));
  const projects = end < 0 ? rest : rest.slice(0, end);
  const runs = [['--passWithNoTests', ...argv]];
  if (at < 0) runs.push(['-c', 'jest.alone.config.js', '--passWithNoTests', ...argv]);
  else if (projects.includes('integration')) {
    const others = [...argv.slice(0, at), ...argv.slice(at + 1 + projects.length)];
    runs.push(['-c', 'jest.alone.config.js', '--passWithNoTests', ...others]);
  }
  return runs;
}

if (require.main === module) {
  const jest = require.resolve('jest/bin/jest');
  const codes = plan(process.argv.slice(2)).map(
    (args) => spawnSync(process.execPath, [jest, ...args], { stdio: 'inherit' }).status ?? 1,
  );
  process.exit(codes.find((c) => c !== 0) ?? 0);
}

module.exports = { plan };
