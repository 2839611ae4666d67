#!/usr/bin/env node
'use strict';
// The dev stack's launcher (`stack up|down|status|provision`, `demo`), from a checkout only: the dev stack is not
// part of the relay, its package or its image. Not built yet: one line saying what to run (exit 2). It runs on
// the built relay (dist/, as `poimen-relay/internal/*`), so dist/ is needed too.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const main = path.join(root, 'dist-devstack', 'devstack', 'cli', 'main.js');
const entries = { dist: path.join(root, 'dist', 'index.js'), 'dist-devstack': main };
const missing = Object.keys(entries).filter((dir) => !fs.existsSync(entries[dir]));
if (missing.length > 0) {
  process.stderr.write(
    `poimen-dev: the dev stack is not built (${missing.join('/ and ')}/ missing): run npm ci && npm run build && npm run build:devstack\n`,
  );
  process.exit(2);
}
require(main);
