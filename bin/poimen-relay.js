#!/usr/bin/env node
'use strict';
// Thin launcher so the package bin works from a checkout and from an install alike.
require('../dist/cli/main.js');
