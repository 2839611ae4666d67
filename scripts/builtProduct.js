#!/usr/bin/env node
'use strict';
// Run before `tsc -p devstack/tsconfig.build.json` and `tsc -p tools/tsconfig.build.json` (npm run build:devstack,
// build:tools): the dev stack and the tools are compiled against the built package (dist/*.d.ts, through
// `poimen-relay/internal/*`) and run against it (dist/*.js), so dist/ must be there and not older than src/. The
// tools are compiled and run against the built dev stack the same way (dist-devstack/, through `#devstack/*`), so
// for dist-tools dist-devstack/ must be there and not older than devstack/ too. Either fault is one line naming
// the build to run first (exit 2), not a wall of "Cannot find module". Then the output folder given
// (dist-devstack, dist-tools) is cleared. Plain Node, no build.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const out = process.argv[2];

/** What an output is built against: a built file that stands for the build, its sources, the command. */
const product = { built: 'dist/index.d.ts', sources: 'src', folder: 'dist/', command: 'npm run build' };
const devstack = {
  built: 'dist-devstack/devstack/config.d.ts',
  sources: 'devstack',
  folder: 'dist-devstack/',
  command: 'npm run build:devstack',
};
const needs = out === 'dist-tools' ? [product, devstack] : [product];

/** Newest modification time (ms) of the .ts files under dir. */
function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts'))
      newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

for (const need of needs) {
  const built = path.join(root, need.built);
  const fault = !fs.existsSync(built)
    ? `${need.folder} is not built`
    : newestSource(path.join(root, need.sources)) > fs.statSync(built).mtimeMs
      ? `${need.folder} is older than ${need.sources}/`
      : undefined;
  if (fault) {
    process.stderr.write(
      `${out ?? 'this build'} is built against ${need.folder}, and ${fault}: run ${need.command} first\n`,
    );
    process.exit(2);
  }
}
if (out) fs.rmSync(path.join(root, out), { recursive: true, force: true });
