#!/usr/bin/env node
'use strict';
// The dev stack's launcher (`stack up|down|status|provision`, `demo`), from a checkout only: the dev stack is not
// part of the relay, its package or its image. Not built yet: one line saying what to run (exit 2).
const fs = require('node:fs');
const path = require('node:path');

const main = path.join(__dirname, '..', '..', 'dist-devstack', 'devstack', 'cli', 'main.js');
if (!fs.existsSync(main)) {
  process.stderr.write(
    'poimen-dev: the dev stack is not built (dist-devstack/ is missing): run npm ci && npm run build:devstack\n',
  );
  process.exit(2);
}
require(main);
