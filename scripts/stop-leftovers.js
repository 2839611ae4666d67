#!/usr/bin/env node
'use strict';
// CI's last resort when the dev stack's own `stack down` cannot run (dist-devstack/ missing after a failed build):
// every daemon recorded in a pid file under the state folder (dev and cluster profiles, the test workers' stacks)
// whose command line still carries the pid file's marker is sent SIGTERM as a process group, then SIGKILL after
// 20 s. Plain Node, no build.
const fs = require('node:fs');
const path = require('node:path');
const { setTimeout } = require('node:timers');

const state = process.argv[2];
if (!state) process.exit(0);
// The dev profile, the cluster profile, and the integration tests' stacks of jest workers 2 and up.
const workerStacks = (() => {
  try {
    return fs.readdirSync(path.join(state, 'test-stacks')).map((w) => path.join('test-stacks', w, 'run'));
  } catch {
    return [];
  }
})();
const pidFiles = ['run', path.join('cluster', 'run'), ...workerStacks].flatMap((dir) => {
  try {
    return fs
      .readdirSync(path.join(state, dir))
      .filter((f) => f.endsWith('.pid'))
      .map((f) => path.join(state, dir, f));
  } catch {
    return [];
  }
});
const ours = (rec) => {
  try {
    return fs.readFileSync(`/proc/${rec.pid}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(rec.marker);
  } catch {
    return false;
  }
};
const signal = (pid, sig) => {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* gone */
    }
  }
};
const live = [];
for (const file of pidFiles) {
  try {
    const rec = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (Number.isInteger(rec.pid) && typeof rec.marker === 'string' && ours(rec)) live.push(rec);
  } catch {
    /* not a pid record */
  }
}
for (const rec of live) {
  process.stdout.write(`stopping ${rec.marker} (pid ${rec.pid})\n`);
  signal(rec.pid, 'SIGTERM');
}
const deadline = Date.now() + 20_000;
const wait = () => {
  const left = live.filter(ours);
  if (left.length === 0) return;
  if (Date.now() > deadline) {
    for (const rec of left) signal(rec.pid, 'SIGKILL');
    return;
  }
  setTimeout(wait, 250);
};
wait();
