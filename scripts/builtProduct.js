#!/usr/bin/env node
'use strict';
// Run before `tsc -p devstack/tsconfig.build.json` and `tsc -p tools/tsconfig.build.json` (npm run build:devstack,
// build:tools): the dev stack and the tools are compiled against the built package (dist/*.d.ts, through
// `poimen-relay/internal/*`) and run against it (dist/*.js), so dist/ must be there and not older than src/.
// Either fault is one line naming `npm run build` (exit 2), not a wall of "Cannot find module". Then the output
// folder given (dist-devstack, dist-tools) is cleared. Plain Node, no build.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const out = process.argv[2];
const built = path.join(root, 'dist', 'index.d.ts');

/** Newest modification time (ms) of the .ts files under dir. */
function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts'))
      newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

const fault = !fs.existsSync(built)
  ? 'dist/ is not built'
  : newestSource(path.join(root, 'src')) > fs.statSync(built).mtimeMs
    ? 'dist/ is older than src/'
    : undefined;
if (fault) {
  process.stderr.write(
    `${out ?? 'this build'} is built against dist/, and ${fault}: run npm run build first\n`,
  );
  process.exit(2);
}
if (out) fs.rmSync(path.join(root, out), { recursive: true, force: true });
