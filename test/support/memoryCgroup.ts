/**
 * Runs a relay process under a memory limit the way a container runtime does: inside its own memory cgroup
 * (v2 when the unified hierarchy has the memory controller, else v1), so the kernel's OOM killer, not a
 * heuristic, decides whether the process fits. Needs root, like a container runtime; where no memory
 * controller can be used the suite fails with one line saying so rather than passing without a limit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { relayNodeOptions } from '../../devstack/relayProcess';
import { PACKAGE_ROOT } from '../../src/version';
import { REPO_ROOT, freePort } from './cli';
import { waitFor } from './wait';

export interface MemoryCgroup {
  dir: string;
  version: 1 | 2;
  /** Highest memory charged to the cgroup so far (v1 memory.max_usage_in_bytes, v2 memory.peak). */
  peakBytes(): number;
  /** Anonymous memory charged now (heap, buffers; not page cache): what the OOM killer cannot reclaim. */
  anonBytes(): number;
  /** How many times the kernel's OOM killer killed a process of this cgroup. */
  oomKills(): number;
  remove(): void;
}

const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/memory';

/** Creates a uniquely named memory cgroup limited to `limitBytes` (no swap). */
export function createMemoryCgroup(limitBytes: number): MemoryCgroup {
  const name = `poimen-test-${crypto.randomUUID()}`;
  const v2 = (() => {
    try {
      return fs
        .readFileSync(path.join(V2_ROOT, 'cgroup.controllers'), 'utf8')
        .split(/\s+/)
        .includes('memory');
    } catch {
      return false;
    }
  })();
  const denied = (err: unknown): Error =>
    new Error(
      `no usable memory cgroup (needs root and the memory controller, v1 at ${V1_ROOT} or v2 at ${V2_ROOT}): ${(err as Error).message}`,
    );
  const read = (dir: string, file: string): string => fs.readFileSync(path.join(dir, file), 'utf8');
  if (v2) {
    const dir = path.join(V2_ROOT, name);
    try {
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'memory.max'), String(limitBytes));
      fs.writeFileSync(path.join(dir, 'memory.swap.max'), '0');
    } catch (err) {
      throw denied(err);
    }
    return {
      dir,
      version: 2,
      peakBytes: () => Number(read(dir, 'memory.peak')),
      anonBytes: () => Number(/^anon (\d+)$/m.exec(read(dir, 'memory.stat'))?.[1] ?? NaN),
      oomKills: () => Number(/^oom_kill (\d+)$/m.exec(read(dir, 'memory.events'))?.[1] ?? NaN),
      remove: () => fs.rmdirSync(dir),
    };
  }
  const dir = path.join(V1_ROOT, name);
  try {
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    // Where swap accounting exists, forbid swap too: a pod has none.
    if (fs.existsSync(path.join(dir, 'memory.memsw.limit_in_bytes')))
      fs.writeFileSync(path.join(dir, 'memory.memsw.limit_in_bytes'), String(limitBytes));
  } catch (err) {
    throw denied(err);
  }
  return {
    dir,
    version: 1,
    peakBytes: () => Number(read(dir, 'memory.max_usage_in_bytes')),
    anonBytes: () => Number(/^total_rss (\d+)$/m.exec(read(dir, 'memory.stat'))?.[1] ?? NaN),
    oomKills: () => Number(/^oom_kill (\d+)$/m.exec(read(dir, 'memory.oom_control'))?.[1] ?? NaN),
    remove: () => fs.rmdirSync(dir),
  };
}

/** The memory limit of a container in a deploy/k8s manifest, in bytes (e.g. `memory: 512Mi`). */
export function manifestMemoryLimitBytes(manifest: string): number {
  const text = fs.readFileSync(path.join(REPO_ROOT, 'deploy', 'k8s', manifest), 'utf8');
  const m = /limits:\s*\n(?:\s+\w+:.*\n)*?\s+memory:\s*'?(\d+)(Mi|Gi)'?/.exec(text);
  if (!m) throw new Error(`no memory limit in deploy/k8s/${manifest}`);
  return Number(m[1]) * 1024 ** (m[2] === 'Gi' ? 3 : 2);
}

export interface CgroupProcess {
  child: ChildProcess;
  metricsPort: number;
  logFile: string;
  exited: Promise<number | null>;
  kill(): Promise<void>;
}

/**
 * Starts `poimen-relay <role>` inside the cgroup from its first instruction (the shell joins the cgroup, then
 * execs node), so start-up memory is charged as it would be in a pod; resolves once /readyz answers 200.
 */
export async function startInCgroup(
  cg: MemoryCgroup,
  role: 'worker' | 'ingest',
  env: NodeJS.ProcessEnv,
  label: string,
): Promise<CgroupProcess> {
  const metricsPort = await freePort();
  const logFile = path.join(REPO_ROOT, 'test-artifacts', 'logs', `${label}-${Date.now()}-${metricsPort}.log`);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const out = fs.openSync(logFile, 'a');
  const child = spawn(
    'sh',
    [
      '-c',
      'echo $$ > "$1/cgroup.procs" && shift && exec "$@"',
      'sh',
      cg.dir,
      process.execPath,
      path.join(PACKAGE_ROOT, 'bin', 'poimen-relay.js'),
      role,
    ],
    {
      env: {
        ...env,
        METRICS_PORT: String(metricsPort),
        NODE_OPTIONS: relayNodeOptions(role, env.NODE_OPTIONS),
      },
      stdio: ['ignore', out, out],
    },
  );
  fs.closeSync(out);
  let gone = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      gone = true;
      resolve(code);
    }),
  );
  const kill = async (): Promise<void> => {
    if (!gone) child.kill('SIGKILL');
    await exited;
  };
  try {
    await waitFor(
      async () => {
        if (gone) return true;
        const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
        return res?.status === 200;
      },
      { timeoutMs: 120_000, intervalMs: 200, what: `${role} ready in its cgroup` },
    );
    if (gone) throw new Error(`${role} exited during start-up; log ${logFile}`);
  } catch (err) {
    await kill();
    throw err;
  }
  return { child, metricsPort, logFile, exited, kill };
}
