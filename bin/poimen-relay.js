#!/usr/bin/env node
'use strict';
// Thin launcher so the package bin works from a checkout and from an install alike. A checkout not built yet gets
// one line saying what to run (exit 2: usage or configuration, docs/cli.md#exit-codes), not MODULE_NOT_FOUND.
const fs = require('node:fs');
const path = require('node:path');

const main = path.join(__dirname, '..', 'dist', 'cli', 'main.js');
if (!fs.existsSync(main)) {
  process.stderr.write(
    'poimen-relay: this checkout is not built (dist/ is missing): run npm ci && npm run build\n',
  );
  process.exit(2);
}
require(main);
