/**
 * Daemons of the local stack: started detached with their output in the state folder, tracked by pid files.
 * A pid file also records a marker (the state folder path) that must appear in the process's command line,
 * so a recycled pid never makes `stack down` signal someone else's process.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { waitUntil } from 'poimen-relay/internal/poll';

interface PidRecord {
  pid: number;
  marker: string;
  startedAt: string;
}

export function readPid(pidFile: string): PidRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(pidFile, 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return undefined;
  }
}

function isZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** Live (not zombie) processes of process group `pgid`. */
function groupMembers(pgid: number): number {
  let n = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

/**
 * Live PostgreSQL processes working in `dir`, compared by device and inode: readlink of /proc/<pid>/cwd gives the
 * resolved path, which a state folder reached through a symlink would not equal.
 */
function postgresWorkingIn(dir: string): number[] {
  let target: fs.Stats;
  try {
    target = fs.statSync(dir);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = fs.statSync(`/proc/${entry}/cwd`);
      if (cwd.dev !== target.dev || cwd.ino !== target.ino || isZombie(Number(entry))) continue;
      if (/^\S*postgres/.test(cmdline(Number(entry)) ?? '')) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to look at
    }
  }
  return pids;
}

/**
 * Waits until no PostgreSQL process works in the data folder `dir` any more, and kills what is left after
 * `graceMs`. Its backends each leave the postmaster's process group (setsid), so a kill -9 of the group leaves them
 * running until they notice their postmaster is gone; a new postmaster started before then finds the folder's
 * shared memory still attached and exits at once. Call it only when no postmaster of `dir` is alive (the caller
 * checks postmaster.pid): what is left then are orphans of a killed one.
 */
export async function clearLeftovers(dir: string, graceMs = 15_000): Promise<number> {
  const found = postgresWorkingIn(dir).length;
  if (found === 0) return 0;
  if (!(await waitUntil(() => postgresWorkingIn(dir).length === 0, graceMs))) {
    for (const pid of postgresWorkingIn(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    await waitUntil(() => postgresWorkingIn(dir).length === 0, 10_000);
  }
  return found;
}

/** The pid of the postmaster recorded in `dataDir`'s postmaster.pid, when that process is alive and serves it. */
export function livePostmaster(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || isZombie(pid)) return undefined;
    return (cmdline(pid) ?? '').includes(dataDir) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The pid recorded in pidFile, if that process is alive and still the one we started. */
export function livePid(pidFile: string): number | undefined {
  const rec = readPid(pidFile);
  if (!rec) return undefined;
  const cmd = cmdline(rec.pid);
  if (cmd === undefined || !cmd.includes(rec.marker) || isZombie(rec.pid)) return undefined;
  return rec.pid;
}

/** The binary a process runs now (/proc/<pid>/exe), undefined once it is gone. */
function exeOf(pid: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

/** How long a start waits for its child's command line to show the marker before it returns anyway. */
const EXEC_WAIT_MS = 10_000;

/**
 * Starts a daemon and returns once its command line shows the pid file's marker, or it has exited. spawn() returns
 * when the child's exec has passed the point of no return, and for a large binary (the Temporal server) the kernel
 * sets up the new command line a little later: a check in between took the child for dead (seen in CI: the stack
 * started Temporal a second time 8 ms after the first; the pid file named the second, which died on the first's
 * database lock, while the first served and `stack down` could no longer stop it).
 */
export async function startDaemon(opts: {
  cmd: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  logFile: string;
  pidFile: string;
  marker: string;
  /** Run as another user (PostgreSQL refuses to run as root). */
  user?: { uid: number; gid: number };
}): Promise<number> {
  const out = fs.openSync(opts.logFile, 'a');
  fs.writeSync(out, `\n=== started ${new Date().toISOString()}: ${opts.cmd} ${opts.args.join(' ')}\n`);
  const child = spawn(opts.cmd, opts.args, {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: ['ignore', out, out],
    ...(opts.user ?? {}),
  });
  fs.closeSync(out);
  if (child.pid === undefined) throw new Error(`could not start ${opts.cmd}`);
  const pid = child.pid;
  let exited = false;
  child.once('exit', () => (exited = true));
  child.unref();
  const rec: PidRecord = { pid, marker: opts.marker, startedAt: new Date().toISOString() };
  fs.writeFileSync(opts.pidFile, JSON.stringify(rec));
  await waitUntil(() => exited || exeOf(pid) === undefined || livePid(opts.pidFile) === pid, EXEC_WAIT_MS, 5);
  return pid;
}

/**
 * Stops the daemon recorded in pidFile: `signal` first (SIGTERM lets Kafka shut down cleanly), SIGKILL when it
 * has not exited within graceMs. Returns false when nothing of ours was running.
 */
export async function stopDaemon(
  pidFile: string,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 30_000,
): Promise<boolean> {
  const pid = livePid(pidFile);
  if (pid === undefined) {
    fs.rmSync(pidFile, { force: true });
    return false;
  }
  // Signal the whole process group: the daemon was started detached, as its own group leader.
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* already gone */
      }
    }
  };
  kill(signal);
  if (!(await waitUntil(() => livePid(pidFile) === undefined, graceMs))) {
    kill('SIGKILL');
    await waitUntil(() => livePid(pidFile) === undefined, 10_000);
  }
  // A dying process loses its command line (so livePid says gone) before the kernel has torn it down and closed
  // its sockets: a big JVM on a busy machine takes seconds. A restart before then would find its port taken. Its
  // whole group too: PostgreSQL's backends still attached to the shared memory make a new postmaster refuse.
  await waitUntil(() => isZombie(pid) && groupMembers(pid) === 0, 30_000);
  fs.rmSync(pidFile, { force: true });
  return true;
}

export function portInUse(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
