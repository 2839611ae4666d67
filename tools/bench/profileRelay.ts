/**
 * `npm run profile -- --role worker|ingest [--n 3000] [--set KEY=VALUE …]` (`npm run profile:worker` for the
 * worker): where one relay process's CPU per dispatch goes. On the local dev stack, one ingester and one worker
 * (the profiled one under `node --cpu-prof`) drain n pre-loaded dispatches into the runs API double; the profiled
 * process is then stopped gracefully so V8 writes its profiles (one per JS thread: the main thread and, in the
 * worker, the workflow threads). Prints its CPU per dispatch by OS thread (/proc, over the drain's window) and, per
 * JS thread, the top functions and packages by self and total time within the same window (./cpuProfile.ts).
 * `--set` gives both processes a relay setting (e.g. POIMEN_INGEST_MAX_OPEN=0: admission off), to profile two
 * settings side by side. Writes tools/results/<date>-profile-<role>[-n<n>][-<label>].json; the .cpuprofile files
 * stay in the stack's logs dir for DevTools.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { Kafka, logLevel } from 'kafkajs';
import { loadStackConfig } from '#devstack/config';
import { freePort } from '#devstack/ports';
import { startRelayProcess } from '#devstack/relayProcess';
import { RunsApiDouble } from '#devstack/runsApiDouble';
import { consoleProgress } from '#devstack/stack/progress';
import { openStack, stackEndpoints } from '#devstack/stack/profiles';
import { stackPaths } from '#devstack/stack/services';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { type CpuProfile, aggregate, rowsTable, timedStacks } from './cpuProfile';
import { parseProcStat, ticksPerSecond } from './cpu';
import { round } from './measure';
import { type BenchTarget, drained, newTenant, preload, relayEnv } from './rig';
import { exitFailed, intAtLeast } from '../cli';

const TOP = 25;

/** Threads that ended before the window closed: Node's vm watchdogs (one per call with a timeout), among others. */
const EXITED = 'threads gone by the end';

/**
 * CPU ticks of each thread of a process now, by tid, with its name (comm); and, under tid 0, the process's own
 * total, which keeps the time of threads that have ended.
 */
function threadTicks(pid: number): Map<number, { name: string; ticks: number }> {
  const out = new Map<number, { name: string; ticks: number }>();
  const own = parseProcStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  out.set(0, { name: EXITED, ticks: own.utime + own.stime });
  const dir = `/proc/${pid}/task`;
  for (const tid of fs.readdirSync(dir)) {
    try {
      const text = fs.readFileSync(path.join(dir, tid, 'stat'), 'utf8');
      const s = parseProcStat(text);
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      out.set(s.pid, { name: s.pid === pid ? 'main (JS event loop)' : name, ticks: s.utime + s.stime });
    } catch {
      continue;
    }
  }
  return out;
}

/**
 * CPU ms per thread over a window, read every second: thread ids are recycled within minutes on a busy machine
 * (pid_max 32768, and each vm watchdog takes one), so two readings minutes apart would pair a thread with another
 * that took its id. Per interval: a thread's growth (its whole time when it is new or its id was reused), and what
 * the process's total grew beyond its live threads' growth, the threads that ended in the interval.
 */
function threadCpu(pid: number) {
  const hz = ticksPerSecond();
  const ms = new Map<number, { name: string; ms: number }>();
  let gone = 0;
  let prev = threadTicks(pid);
  const sample = () => {
    const cur = threadTicks(pid);
    let live = 0;
    for (const [tid, t] of cur) {
      if (tid === 0) continue;
      const was = prev.get(tid);
      const grew = was && was.name === t.name && was.ticks <= t.ticks ? t.ticks - was.ticks : t.ticks;
      live += grew;
      const acc = ms.get(tid) ?? { name: t.name, ms: 0 };
      acc.ms += (grew * 1000) / hz;
      ms.set(tid, acc);
    }
    gone += Math.max(0, cur.get(0)!.ticks - prev.get(0)!.ticks - live);
    prev = cur;
  };
  const timer = setInterval(sample, 1000);
  return {
    end(): { tid: number; name: string; ms: number }[] {
      clearInterval(timer);
      sample();
      return [
        ...[...ms].map(([tid, t]) => ({ tid, ...t })),
        { tid: 0, name: EXITED, ms: (gone * 1000) / hz },
      ];
    },
  };
}

/** V8's profiler thread: the profile's own cost, not the worker's. */
const PROFILER_THREAD = 'v8:ProfEvntProc';

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

const positive = intAtLeast(1);

const role = (v: string): 'worker' | 'ingest' => {
  if (v !== 'worker' && v !== 'ingest') throw new InvalidArgumentError('must be worker or ingest');
  return v;
};

const setting = (v: string, acc: Record<string, string>): Record<string, string> => {
  const eq = v.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('must be KEY=VALUE');
  return { ...acc, [v.slice(0, eq)]: v.slice(eq + 1) };
};

async function main(): Promise<void> {
  const opts = new Command('profile')
    .option('--role <role>', 'the process to profile: worker or ingest', role, 'worker')
    .option('--set <KEY=VALUE>', 'a relay setting for both processes (repeatable)', setting, {})
    .option('--n <n>', 'dispatches to drain (default 3000)', positive, 3000)
    .option('--label <label>', 'appended to the result file name (e.g. before, after)')
    .option('--interval-us <us>', 'V8 sampling interval in microseconds (default 1000)', positive, 1000)
    .parse(process.argv)
    .opts<{
      role: 'worker' | 'ingest';
      set: Record<string, string>;
      n: number;
      label?: string;
      intervalUs: number;
    }>();
  const cfg = loadStackConfig();
  await openStack(cfg, 'dev', consoleProgress('profile')).up();
  const endpoints = stackEndpoints(cfg, 'dev');
  const kafka = new Kafka({
    clientId: 'poimen-profile',
    brokers: endpoints.kafka.brokers,
    logLevel: logLevel.ERROR,
  });
  const logsDir = stackPaths(cfg).logsDir;
  const t: BenchTarget = {
    kafkaBrokers: endpoints.kafka.bootstrap,
    temporalAddress: endpoints.temporal.address,
    namespace: endpoints.temporal.namespace,
    logsDir,
    kafka,
  };
  const profDir = fs.mkdtempSync(path.join(logsDir, `${opts.role}-cpuprofile-`));
  const profFlags = [`--cpu-prof`, `--cpu-prof-dir=${profDir}`, `--cpu-prof-interval=${opts.intervalUs}`];
  const profiled = (r: 'worker' | 'ingest') => (r === opts.role ? { execArgv: profFlags } : {});
  const api = await RunsApiDouble.start({ record: false });
  const tenant = await newTenant(t, 4);
  await preload(t, tenant, opts.n, 'prof');
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-prof-${tenant}`,
    KAFKA_GROUP_ID: `bench-prof-${tenant}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
    ...opts.set,
  });
  const worker = await startRelayProcess({
    role: 'worker',
    env,
    metricsPort: await freePort(),
    logFile: path.join(logsDir, 'bench-profile-worker.log'),
    ...profiled('worker'),
  });
  let pid = 0;
  let window: {
    fromUs: number;
    toUs: number;
    threads: ReturnType<ReturnType<typeof threadCpu>['end']>;
    dispatches: number;
  };
  try {
    const ingester = await startRelayProcess({
      role: 'ingest',
      env,
      metricsPort: await freePort(),
      logFile: path.join(logsDir, 'bench-profile-ingest.log'),
      ...profiled('ingest'),
    });
    pid = (opts.role === 'worker' ? worker : ingester).child.pid!;
    try {
      // The window opens once both are up (start-up is a one-off) and closes when the API has the last run.
      const cpu = threadCpu(pid);
      const runsBefore = api.runs.size;
      const fromUs = nowUs();
      await drained(api, opts.n, 30 * 60_000);
      const toUs = nowUs();
      const threads = cpu.end();
      window = { fromUs, toUs, threads, dispatches: api.runs.size - runsBefore };
    } finally {
      const code = await ingester.stop();
      if (code !== 0) process.stderr.write(`profile: the ingester exited with ${String(code)}\n`);
    }
  } finally {
    const code = await worker.stop();
    await api.close();
    if (code !== 0) process.stderr.write(`profile: the worker exited with ${String(code)}\n`);
  }
  const files = fs.readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0)
    throw new Error(`no .cpuprofile in ${profDir}: did the ${opts.role} exit normally?`);
  const d = window.dispatches;
  const byName: Record<string, number> = {};
  for (const th of window.threads) byName[th.name] = (byName[th.name] ?? 0) + th.ms;
  const byThread = Object.entries(byName).sort((a, b) => b[1] - a[1]);
  const cpuMs = window.threads.filter((th) => th.name !== PROFILER_THREAD).reduce((a, th) => a + th.ms, 0);
  const mainCpuMs = window.threads.find((th) => th.tid === pid)!.ms;
  const out: string[] = [];
  out.push(
    `${opts.role} CPU over the drain (/proc, without the profiler's own thread ${PROFILER_THREAD}): ${round(cpuMs / d, 3)} ms per dispatch (${d} dispatches, ${round((window.toUs - window.fromUs) / 1e6)} s)`,
  );
  for (const [name, ms] of byThread) out.push(`  ${name.padEnd(24)} ${(ms / d).toFixed(3)} ms/dispatch`);
  const busiest = window.threads
    .filter((th) => th.tid !== pid && th.tid !== 0 && th.ms > 0)
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 8);
  out.push(
    `  busiest other threads: ${busiest.map((th) => `${th.name}#${th.tid} ${(th.ms / d).toFixed(3)}`).join(', ')}`,
  );
  // The main thread's CPU over its sampled time: how much longer than CPU time a sample is on this machine now.
  let scale = 1;
  const threads = files.sort().map((file) => {
    const profile = JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')) as CpuProfile;
    // Node's file name: CPU.<date>.<time>.<pid>.<threadId>.<seq>.cpuprofile; thread 0 is the main thread.
    const threadId = Number(file.split('.')[4]);
    const inWindow = profile.startTime <= window.toUs && profile.endTime >= window.fromUs;
    const agg = aggregate(timedStacks(profile, window.fromUs, window.toUs));
    // The main thread is the one whose OS thread is known (tid = pid); a workflow thread's is not named on Node 20,
    // so its samples are scaled by the main thread's ratio (an estimate).
    if (threadId === 0) scale = mainCpuMs / (agg.totalMs || 1);
    out.push(
      `\n${threadId === 0 ? 'main thread' : `JS thread ${threadId} (workflows)`}: ${round(agg.totalMs / d, 3)} ms of non-idle samples per dispatch, ${round((agg.totalMs * scale) / d, 3)} ms CPU${threadId === 0 ? ' (/proc)' : ' (estimated with the main thread’s CPU per sampled ms)'}${inWindow ? '' : ' (PROFILE OUTSIDE THE WINDOW: clocks differ?)'}`,
      `-- by package / file group (self: time in its own frames and the builtins they call; total: on the stack) --`,
      rowsTable(agg.groups, agg.totalMs, d, TOP, scale),
      `-- top ${TOP} functions by self time --`,
      rowsTable(agg.functions, agg.totalMs, d, TOP, scale),
    );
    const rows = (r: { name: string; selfMs: number; totalMs: number }[]) =>
      r.slice(0, TOP * 2).map((x) => ({
        name: x.name,
        self_cpu_ms_per_dispatch: round((x.selfMs * scale) / d, 4),
        total_cpu_ms_per_dispatch: round((x.totalMs * scale) / d, 4),
        self_share: round(x.selfMs / (agg.totalMs || 1), 4),
      }));
    return {
      file: path.join(profDir, file),
      thread_id: threadId,
      sampled_ms_per_dispatch: round(agg.totalMs / d, 3),
      cpu_ms_per_sampled_ms: round(scale, 4),
      cpu_ms_per_dispatch: round((agg.totalMs * scale) / d, 3),
      groups: rows(agg.groups),
      functions: rows(agg.functions),
    };
  });
  process.stdout.write(`\n${out.join('\n')}\n`);
  const result = {
    date: new Date().toISOString(),
    machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
    role: opts.role,
    settings: {
      n: opts.n,
      partitions: 4,
      sampling_interval_us: opts.intervalUs,
      profile: 'dev',
      relay: opts.set,
    },
    dispatches: d,
    window_s: round((window.toUs - window.fromUs) / 1e6),
    cpu_ms_per_dispatch: round(cpuMs / d, 3),
    cpu_ms_per_dispatch_by_thread: Object.fromEntries(byThread.map(([k, v]) => [k, round(v / d, 3)])),
    busiest_threads: busiest.map((th) => ({
      tid: th.tid,
      name: th.name,
      cpu_ms_per_dispatch: round(th.ms / d, 3),
    })),
    threads,
  };
  const dir = path.join(PACKAGE_ROOT, 'tools', 'results');
  const suffix = `${opts.n === 3000 ? '' : `-n${opts.n}`}${opts.label ? `-${opts.label}` : ''}`;
  const file = path.join(dir, `${result.date.slice(0, 10)}-profile-${opts.role}${suffix}.json`);
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`\nwritten to ${path.relative(process.cwd(), file)}; profiles in ${profDir}\n`);
}

main().catch((err: unknown) => exitFailed('profile', err));
