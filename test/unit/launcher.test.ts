/**
 * The package's launcher (bin/poimen-relay.js) in a checkout nobody has built yet: one line saying what to run,
 * exit 2 (usage or configuration: docs/cli.md#exit-codes), never Node's MODULE_NOT_FOUND stack trace.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const LAUNCHER = path.join(__dirname, '..', '..', 'bin', 'poimen-relay.js');

test('an unbuilt checkout gets one line naming npm run build, exit 2', () => {
  const checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'unbuilt-'));
  try {
    fs.mkdirSync(path.join(checkout, 'bin'));
    fs.copyFileSync(LAUNCHER, path.join(checkout, 'bin', 'poimen-relay.js'));
    const r = spawnSync(process.execPath, [path.join(checkout, 'bin', 'poimen-relay.js'), '--help'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      'poimen-relay: this checkout is not built (dist/ is missing): run npm ci && npm run build',
    ]);
    expect(r.stdout).toBe('');
  } finally {
    fs.rmSync(checkout, { recursive: true, force: true });
  }
});
