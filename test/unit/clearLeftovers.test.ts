/**
 * A PostgreSQL restarted right after a kill -9 must not meet its old backends (they leave the killed process
 * group and linger in the data folder): the start waits them out, and kills what outlives the grace.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clearLeftovers } from '../../src/devstack/stack/processes';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function lingering(seconds: number) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'leftover-')));
  dirs.push(dir);
  const child = spawn('sleep', [String(seconds)], { cwd: dir, stdio: 'ignore' });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { dir, exited };
}

test('a process still working in the folder is waited for while it leaves by itself', async () => {
  const p = lingering(0.5);
  expect(await clearLeftovers(p.dir, 10_000)).toBe(1);
  expect(await p.exited).toEqual({ code: 0, signal: null });
});

test('one that outlives the grace is killed before the start goes on', async () => {
  const p = lingering(60);
  expect(await clearLeftovers(p.dir, 300)).toBe(1);
  expect(await p.exited).toEqual({ code: null, signal: 'SIGKILL' });
});

test('an empty folder: nothing to wait for', async () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'leftover-')));
  dirs.push(dir);
  expect(await clearLeftovers(dir, 300)).toBe(0);
});
