/**
 * CPU time of each process role of the relay's topology over a measurement window, read from /proc/<pid>/stat,
 * so the bench can state what one dispatch costs each process (the capacity model divides a target rate by it).
 * The parsing and the arithmetic are pure functions over stat text; only readProcStats touches /proc.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { round } from './measure';

export const CPU_ROLES = ['ingester', 'worker', 'temporal', 'postgres', 'kafka'] as const;
export type CpuRole = (typeof CPU_ROLES)[number];
/** Root pids of each role; an empty list means the profile has no such process. */
export type RolePids = Record<CpuRole, number[]>;
/** A figure per role; null where the profile has no such process (postgres on dev) or it was not measurable. */
export type RoleFigures = Record<CpuRole, number | null>;
/** The stack's server processes by role: the shape stackServerPids(cfg, profile) returns. */
export type ServerPids = Pick<RolePids, 'temporal' | 'postgres' | 'kafka'>;

export interface ProcStat {
  pid: number;
  ppid: number;
  /** Clock ticks: user and system time of the process (all its threads). */
  utime: number;
  stime: number;
  /** Clock ticks of its children that exited and that it waited for (recursively: theirs include their own). */
  cutime: number;
  cstime: number;
}

/**
 * One /proc/<pid>/stat line. The command name (field 2) is in parentheses and may itself contain spaces and
 * parentheses, so the numeric fields are taken after the LAST ')'.
 */
export function parseProcStat(text: string): ProcStat {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) throw new Error(`not a /proc stat line: ${text.slice(0, 80)}`);
  // After ')': field 3 (state) is index 0, so field k is index k - 3.
  const f = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const num = (field: number) => {
    const v = Number(f[field - 3]);
    if (!Number.isInteger(v))
      throw new Error(`/proc stat field ${field} is not a number: ${text.slice(0, 80)}`);
    return v;
  };
  return {
    pid: Number(text.slice(0, open).trim()),
    ppid: num(4),
    utime: num(14),
    stime: num(15),
    cutime: num(16),
    cstime: num(17),
  };
}

/** Every process /proc lists now, by pid; processes that exit while it is read are skipped. */
export function readProcStats(procRoot = '/proc'): Map<number, ProcStat> {
  const stats = new Map<number, ProcStat>();
  for (const name of fs.readdirSync(procRoot)) {
    if (!/^\d+$/.test(name)) continue;
    let text: string;
    try {
      text = fs.readFileSync(path.join(procRoot, name, 'stat'), 'utf8');
    } catch {
      continue;
    }
    const stat = parseProcStat(text);
    stats.set(stat.pid, stat);
  }
  return stats;
}

/**
 * CPU ticks of a process and everything below it: each live process's own time plus, through cutime/cstime,
 * every descendant that already exited and was waited for. PostgreSQL needs this: its work is done by backends
 * that the postmaster forks per connection and reaps when they end, so summing the live tree alone would lose
 * every backend that closed during the window, and the root's own time alone would miss the live ones. Nothing is
 * counted twice: a process's time moves into its parent's cutime only once it is reaped and gone from /proc.
 * (A child whose parent dies first is re-parented outside the tree and lost; the relay's servers do not do that.)
 * Undefined when the root is gone.
 */
export function treeTicks(stats: Map<number, ProcStat>, root: number): number | undefined {
  if (!stats.has(root)) return undefined;
  const children = new Map<number, number[]>();
  for (const s of stats.values()) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  let ticks = 0;
  const seen = new Set<number>();
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    const s = stats.get(pid);
    if (!s || seen.has(pid)) continue;
    seen.add(pid);
    ticks += s.utime + s.stime + s.cutime + s.cstime;
    stack.push(...(children.get(pid) ?? []));
  }
  return ticks;
}

/** Ticks per role at one moment: null for a role without processes or with a root that is gone. */
export function roleTicks(stats: Map<number, ProcStat>, pids: RolePids): RoleFigures {
  const out = {} as RoleFigures;
  for (const role of CPU_ROLES) {
    const roots = pids[role];
    const each = roots.map((pid) => treeTicks(stats, pid));
    out[role] =
      roots.length === 0 || each.includes(undefined) ? null : each.reduce<number>((a, b) => a + (b ?? 0), 0);
  }
  return out;
}

/** CPU milliseconds per role between two readings of the same pids. */
export function cpuMsBetween(start: RoleFigures, end: RoleFigures, ticksPerSecond: number): RoleFigures {
  const out = {} as RoleFigures;
  for (const role of CPU_ROLES) {
    const a = start[role];
    const b = end[role];
    out[role] = a === null || b === null ? null : ((b - a) * 1000) / ticksPerSecond;
  }
  return out;
}

/**
 * CPU ms per dispatch over one or more windows: the sum of CPU over the sum of dispatches (a mean weighted by
 * dispatches, so a short window's tick rounding counts for little). Null for a role that any window lacks.
 */
export function cpuMsPerDispatch(windows: { cpu_ms: RoleFigures; dispatches: number }[]): RoleFigures {
  const dispatches = windows.reduce((a, w) => a + w.dispatches, 0);
  const out = {} as RoleFigures;
  for (const role of CPU_ROLES) {
    const ms = windows.map((w) => w.cpu_ms[role]);
    out[role] =
      dispatches === 0 || ms.length === 0 || ms.includes(null)
        ? null
        : round(ms.reduce<number>((a, b) => a + (b ?? 0), 0) / dispatches, 3);
  }
  return out;
}

/** The side-by-side line of the printed summary: the five roles in order, '—' where a role has no figure. */
export function cpuRow(perDispatch: RoleFigures): string {
  const total = CPU_ROLES.reduce((a, r) => a + (perDispatch[r] ?? 0), 0);
  const each = CPU_ROLES.map((r) => `${r} ${perDispatch[r] ?? '—'}`);
  return `${each.join(', ')} (sum ${round(total, 3)}) ms`;
}

let clockTicks: number | undefined;
/** USER_HZ, the unit of /proc's times: `getconf CLK_TCK`, 100 on Linux when getconf is unavailable. */
export function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim();
    const n = Number(out);
    clockTicks = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return clockTicks;
}

/** Opens a window over the given processes; end() returns the CPU ms each role used since. */
export function cpuWindow(
  pids: RolePids,
  read: () => Map<number, ProcStat> = () => readProcStats(),
  hz: number = ticksPerSecond(),
): { end(): RoleFigures } {
  const start = roleTicks(read(), pids);
  return { end: () => cpuMsBetween(start, roleTicks(read(), pids), hz) };
}

/** CPU ms per second of each role over a window of the given length. */
export function perSecond(ms: RoleFigures, windowS: number): RoleFigures {
  const out = {} as RoleFigures;
  for (const role of CPU_ROLES) {
    const v = ms[role];
    out[role] = v === null ? null : round(v / windowS, 1);
  }
  return out;
}

/**
 * CPU per dispatch over drains with each process's idle rate over each drain's window taken out (never below 0).
 * Idle is what a process spends with no dispatches to do — kafkajs heartbeats and metadata refreshes, the
 * worker's long polls, Temporal's shard and queue loops, PostgreSQL's checkpointer, the brokers' replica fetchers
 * — and it is in every drain's figure, spread over its dispatches, so a slow drain looks costly. Taken out, what
 * is left is what a dispatch adds; a capacity model multiplies that by the rate and adds the idle once per process.
 */
export function cpuAboveIdle(
  drains: {
    cpu_ms: RoleFigures;
    cpu_dispatches: number;
    cpu_window_s: number;
    idle_cpu_ms_per_s: RoleFigures;
  }[],
): RoleFigures {
  const dispatches = drains.reduce((a, d) => a + d.cpu_dispatches, 0);
  const out = {} as RoleFigures;
  for (const role of CPU_ROLES) {
    const net = drains.map((d) => {
      const used = d.cpu_ms[role];
      const idle = d.idle_cpu_ms_per_s[role];
      return used === null || idle === null ? null : used - idle * d.cpu_window_s;
    });
    out[role] =
      dispatches === 0 || net.includes(null)
        ? null
        : round(Math.max(0, net.reduce<number>((a, b) => a + (b ?? 0), 0) / dispatches), 3);
  }
  return out;
}
