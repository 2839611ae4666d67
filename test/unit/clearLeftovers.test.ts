/**
 * A PostgreSQL restarted right after a kill -9 must not meet its old backends (they leave the killed process
 * group and linger in the data folder): the start waits them out, and kills what outlives the grace. Only
 * PostgreSQL's processes are waited for; a live postmaster of the folder is found by its postmaster.pid.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clearLeftovers, livePostmaster } from '../../devstack/stack/processes';
import { spawnIdler } from '../support/spawned';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
});

function folder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leftover-'));
  dirs.push(dir);
  return dir;
}

/** A process working in `dir` whose command line reads like a PostgreSQL backend's (or `name`). */
async function lingering(dir: string, seconds: number, name = 'postgres: leftover backend') {
  const child = await spawnIdler({ seconds, argv0: name, cwd: dir }, children);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, exited };
}

test('a backend still working in the folder is waited for while it leaves by itself', async () => {
  const dir = folder();
  const p = await lingering(dir, 1);
  expect(await clearLeftovers(dir, 10_000)).toBe(1);
  expect(await p.exited).toEqual({ code: 0, signal: null });
});

test('one that outlives the grace is killed before the start goes on', async () => {
  const dir = folder();
  const p = await lingering(dir, 60);
  expect(await clearLeftovers(dir, 300)).toBe(1);
  expect(await p.exited).toEqual({ code: null, signal: 'SIGKILL' });
});

test('the folder reached through a symlink: its backends are found all the same', async () => {
  const dir = folder();
  const link = path.join(folder(), 'data-link');
  fs.symlinkSync(dir, link);
  const p = await lingering(dir, 60);
  expect(await clearLeftovers(link, 300)).toBe(1);
  expect(await p.exited).toEqual({ code: null, signal: 'SIGKILL' });
});

test('a process that is not PostgreSQL (a shell left in the folder) is not waited for, and not killed', async () => {
  const dir = folder();
  const p = await lingering(dir, 60, 'bash');
  expect(await clearLeftovers(dir, 300)).toBe(0);
  expect(p.child.exitCode).toBeNull();
  expect(p.child.signalCode).toBeNull();
});

test('a live postmaster of the folder is recognised by its postmaster.pid; a stale one is not', async () => {
  const dir = folder();
  // A postmaster's command line names its data folder (postgres -D <dir>).
  const live = await spawnIdler({ seconds: 60, argv0: 'postgres', words: ['-D', dir] }, children);
  fs.writeFileSync(path.join(dir, 'postmaster.pid'), `${live.pid}\n${dir}\n`);
  expect(livePostmaster(dir)).toBe(live.pid);
  live.kill('SIGKILL');
  await new Promise((r) => live.on('exit', r));
  expect(livePostmaster(dir)).toBeUndefined();
});
