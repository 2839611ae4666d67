/**
 * The bench's CPU-per-dispatch figures (tools/bench/cpu.ts): /proc/<pid>/stat parsing, the process-tree sum that
 * keeps PostgreSQL's exited backends through the postmaster's cutime/cstime, and the per-dispatch arithmetic, over
 * fake /proc text; plus one reading of this process's own real stat.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadStackConfig } from '../../devstack/config';
import {
  type ProcStat,
  type RolePids,
  cpuMsPerDispatch,
  cpuRow,
  cpuWindow,
  parseProcStat,
  readProcStats,
  roleTicks,
  cpuAboveIdle,
  perSecond,
  treeTicks,
} from '../../tools/bench/cpu';
import { stackServerPids } from '../../devstack/stack/profiles';

/** A stat line as the kernel writes it (52 fields); only pid, comm, ppid and the four times vary here. */
function statLine(pid: number, comm: string, ppid: number, [ut, st, cut, cst]: number[]): string {
  const tail = Array.from({ length: 35 }, (_, i) => String(i + 100)).join(' ');
  return `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 4194304 72726 0 49 0 ${ut} ${st} ${cut} ${cst} 20 0 105 0 ${tail}\n`;
}

const stats = (...lines: string[]) => new Map(lines.map((l) => [parseProcStat(l).pid, parseProcStat(l)]));
const none: RolePids = { ingester: [], worker: [], temporal: [], postgres: [], kafka: [] };

describe('parseProcStat', () => {
  test('takes the numeric fields after the last ")", whatever the command name holds', () => {
    const weird = 'post gres: (x) ) idle (';
    expect(parseProcStat(statLine(4242, weird, 17, [911, 59, 3, 4]))).toEqual<ProcStat>({
      pid: 4242,
      ppid: 17,
      utime: 911,
      stime: 59,
      cutime: 3,
      cstime: 4,
    });
  });

  test('a real line of the Kafka JVM', () => {
    const line =
      '31163 (java) S 1 31163 31163 0 -1 4194304 72726 0 49 0 911 59 0 0 20 0 105 0 3357934 5781155840 70937 ' +
      '18446744073709551615 94870610907136 94870610908021 140734524292512 0 0 0 0 0 16800975 0 0 0 17 1 0 0 0 0 0';
    expect(parseProcStat(line)).toMatchObject({ pid: 31163, ppid: 1, utime: 911, stime: 59, cutime: 0 });
  });

  test('refuses text that is not a stat line', () => {
    expect(() => parseProcStat('')).toThrow(/not a \/proc stat line/);
    expect(() => parseProcStat('12 (x) S')).toThrow(/field 4 is not a number/);
  });
});

describe('treeTicks', () => {
  test("a root's own, its live descendants' and its reaped children's time; not a neighbour's", () => {
    const s = stats(
      statLine(100, 'postgres', 1, [10, 5, 200, 20]), // 220 ticks of backends that already exited
      statLine(101, 'postgres: checkpointer', 100, [3, 1, 0, 0]),
      statLine(102, 'postgres: bench idle', 100, [40, 10, 0, 0]),
      statLine(103, 'a child of a backend', 102, [2, 0, 0, 0]),
      statLine(200, 'someone else', 1, [999, 999, 999, 999]),
    );
    expect(treeTicks(s, 100)).toBe(15 + 220 + 4 + 50 + 2);
    expect(treeTicks(s, 102)).toBe(52);
    expect(treeTicks(s, 300)).toBeUndefined();
  });

  test('a backend that exits inside the window still counts, through the postmaster that reaped it', () => {
    const before = stats(
      statLine(100, 'postmaster', 1, [100, 0, 0, 0]),
      statLine(101, 'backend A', 100, [50, 0, 0, 0]),
    );
    // A used 30 more ticks, exited and was reaped (80 in all, now in the root's cutime); B started and used 5.
    const after = stats(
      statLine(100, 'postmaster', 1, [110, 0, 80, 0]),
      statLine(102, 'backend B', 100, [5, 0, 0, 0]),
    );
    expect(treeTicks(after, 100)! - treeTicks(before, 100)!).toBe(10 + 30 + 5);
  });
});

describe('roles and windows', () => {
  const s = stats(
    statLine(10, 'node', 1, [100, 20, 0, 0]),
    statLine(11, 'node', 1, [50, 10, 0, 0]),
    statLine(12, 'node', 1, [70, 30, 0, 0]),
    statLine(20, 'temporal', 1, [300, 100, 0, 0]),
  );

  test('sums every ingester and every worker; null for a role without processes or with one gone', () => {
    const t = roleTicks(s, { ...none, ingester: [10], worker: [11, 12], temporal: [20], kafka: [30] });
    expect(t).toEqual({ ingester: 120, worker: 160, temporal: 400, postgres: null, kafka: null });
  });

  test('a window turns tick deltas into milliseconds at the clock rate', () => {
    const later = stats(
      statLine(10, 'node', 1, [130, 20, 0, 0]),
      statLine(11, 'node', 1, [60, 10, 0, 0]),
      statLine(12, 'node', 1, [70, 35, 0, 0]),
      statLine(20, 'temporal', 1, [380, 120, 0, 0]),
    );
    const reads = [s, later];
    const w = cpuWindow(
      { ...none, ingester: [10], worker: [11, 12], temporal: [20] },
      () => reads.shift()!,
      100,
    );
    expect(w.end()).toEqual({ ingester: 300, worker: 150, temporal: 1000, postgres: null, kafka: null });
  });

  test('per dispatch is the sum of CPU over the sum of dispatches; a role missing in any window is null', () => {
    const ms = (ingester: number, kafka: number | null) => ({
      ingester,
      worker: 9,
      temporal: 30,
      postgres: null,
      kafka,
    });
    expect(
      cpuMsPerDispatch([
        { cpu_ms: ms(100, 40), dispatches: 100 },
        { cpu_ms: ms(500, 20), dispatches: 200 },
      ]),
    ).toEqual({ ingester: 2, worker: 0.06, temporal: 0.2, postgres: null, kafka: 0.2 });
    expect(
      cpuMsPerDispatch([
        { cpu_ms: ms(1, 40), dispatches: 1 },
        { cpu_ms: ms(1, null), dispatches: 1 },
      ]).kafka,
    ).toBeNull();
    expect(cpuMsPerDispatch([{ cpu_ms: ms(1, 40), dispatches: 0 }]).ingester).toBeNull();
  });

  test('the summary line shows the five roles side by side', () => {
    expect(cpuRow({ ingester: 1.5, worker: 4, temporal: 7.25, postgres: null, kafka: 0.5 })).toBe(
      'ingester 1.5, worker 4, temporal 7.25, postgres —, kafka 0.5 (sum 13.25) ms',
    );
  });
});

describe('reading /proc', () => {
  test('lists numeric entries only and skips a process that vanished while /proc was read', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-proc-'));
    try {
      const put = (dir: string, text?: string) => {
        fs.mkdirSync(path.join(root, dir));
        if (text !== undefined) fs.writeFileSync(path.join(root, dir, 'stat'), text);
      };
      put('7', statLine(7, 'kafka (broker) 1', 1, [1, 2, 3, 4]));
      put('8'); // exited between the directory listing and the read
      put('self', statLine(7, 'kafka (broker) 1', 1, [1, 2, 3, 4]));
      expect([...readProcStats(root).keys()]).toEqual([7]);
      expect(treeTicks(readProcStats(root), 7)).toBe(10);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  test("this process's real stat: found, parented, and its ticks grow with the CPU it burns", () => {
    const before = treeTicks(readProcStats(), process.pid)!;
    expect(readProcStats().get(process.pid)?.ppid).toBe(process.ppid);
    const start = process.cpuUsage();
    let x = 0;
    while (process.cpuUsage(start).user + process.cpuUsage(start).system < 200_000) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    // 200 ms of CPU is 20 ticks at 100 Hz; allow for tick rounding at both ends.
    expect(treeTicks(readProcStats(), process.pid)! - before).toBeGreaterThanOrEqual(10);
  });
});

describe('stackServerPids, the servers the bench measures', () => {
  // The marker must be on the process's command line: this process's own executable is.
  const marker = fs.readFileSync('/proc/self/cmdline', 'utf8').split('\0')[0]!;
  const rec = (pid: number) => JSON.stringify({ pid, marker, startedAt: new Date().toISOString() });

  test("the dev profile's Temporal and Kafka from the stack's pid files; no PostgreSQL; a stale file is no pid", () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-state-'));
    try {
      const cfg = loadStackConfig({ POIMEN_STATE_DIR: stateDir });
      const runDir = path.join(stateDir, 'run');
      fs.mkdirSync(runDir);
      fs.writeFileSync(path.join(runDir, 'temporal.pid'), rec(process.pid));
      expect(stackServerPids(cfg, 'dev')).toEqual({ temporal: [process.pid], postgres: [], kafka: [] });
      fs.writeFileSync(
        path.join(runDir, 'kafka.pid'),
        JSON.stringify({ pid: process.pid, marker: `${stateDir}-x` }),
      );
      expect(stackServerPids(cfg, 'dev').kafka).toEqual([]);
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });

  test("the cluster profile's Temporal server, postmaster and three brokers from its own run folder", () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-state-'));
    try {
      const cfg = loadStackConfig({ POIMEN_STATE_DIR: stateDir });
      const runDir = path.join(stateDir, 'cluster', 'run');
      fs.mkdirSync(runDir, { recursive: true });
      for (const name of ['temporal', 'postgres', 'kafka-1', 'kafka-2', 'kafka-3']) {
        fs.writeFileSync(path.join(runDir, `${name}.pid`), rec(process.pid));
      }
      const me = process.pid;
      expect(stackServerPids(cfg, 'cluster')).toEqual({
        temporal: [me],
        postgres: [me],
        kafka: [me, me, me],
      });
      // The dev profile's run folder is another one: nothing of the cluster counts there.
      expect(stackServerPids(cfg, 'dev')).toEqual({ temporal: [], postgres: [], kafka: [] });
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe('cpuAboveIdle', () => {
  const f = (temporal: number | null, postgres: number | null, kafka: number | null) => ({
    ingester: 700,
    worker: 1200,
    temporal,
    postgres,
    kafka,
  });

  test("takes each process's idle rate over each drain's window out, summed over drains, per dispatch", () => {
    const idle = { ...f(50, 10, 100), ingester: 20, worker: 10 };
    const drains = [
      { cpu_ms: f(3000, 1000, 500), cpu_dispatches: 100, cpu_window_s: 10, idle_cpu_ms_per_s: idle },
      { cpu_ms: f(5000, 1500, 700), cpu_dispatches: 100, cpu_window_s: 20, idle_cpu_ms_per_s: idle },
    ];
    // ingester: (700 - 200 + 700 - 400) / 200 = 4; worker: (1200 - 100 + 1200 - 200) / 200 = 10.5;
    // temporal: (3000 - 500 + 5000 - 1000) / 200 = 32.5; postgres: (1000 - 100 + 1500 - 200) / 200 = 11;
    // kafka's idle exceeds what it used: never below 0.
    expect(cpuAboveIdle(drains)).toEqual({
      ingester: 4,
      worker: 10.5,
      temporal: 32.5,
      postgres: 11,
      kafka: 0,
    });
  });

  test('null for a role without processes (PostgreSQL on the dev profile) or without an idle figure', () => {
    const drains = [
      {
        cpu_ms: f(3000, null, 500),
        cpu_dispatches: 100,
        cpu_window_s: 10,
        idle_cpu_ms_per_s: { ...f(null, null, 10), ingester: 0, worker: 0 },
      },
    ];
    expect(cpuAboveIdle(drains)).toEqual({
      ingester: 7,
      worker: 12,
      temporal: null,
      postgres: null,
      kafka: 4,
    });
  });

  test('perSecond turns a window into a rate', () => {
    expect(perSecond(f(300, null, 55), 10)).toEqual({ ...f(30, null, 5.5), ingester: 70, worker: 120 });
  });
});
