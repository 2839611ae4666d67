/**
 * Runs `poimen-relay ingest` / `worker` as child processes, the way an operator runs them; the demo and the
 * integration tests both use it, so both exercise the real entry points.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { waitUntil } from 'poimen-relay/internal/poll';

export type RelayRole = 'ingest' | 'worker';

/**
 * V8 heap limits per process. Without them V8 lets garbage grow towards its default old-space limit (~2 GiB)
 * and a backlog shows up as RSS; with them the collector runs earlier. The ingester's young generation is
 * small too: it allocates one short-lived batch after another. Measured in docs/performance.md; deploy/k8s
 * and docker-compose.yml set the same flags (test/unit/deploy.test.ts keeps them equal).
 */
export const RELAY_HEAP: Record<RelayRole, { oldSpaceMiB: number; semiSpaceMiB?: number }> = {
  ingest: { oldSpaceMiB: 96, semiSpaceMiB: 2 },
  worker: { oldSpaceMiB: 128, semiSpaceMiB: 8 },
};

/** The role's V8 heap flags, as NODE_OPTIONS carries them. */
export function relayHeapFlags(role: RelayRole): string {
  const { oldSpaceMiB, semiSpaceMiB } = RELAY_HEAP[role];
  return [
    `--max-old-space-size=${oldSpaceMiB}`,
    ...(semiSpaceMiB ? [`--max-semi-space-size=${semiSpaceMiB}`] : []),
  ].join(' ');
}

/** NODE_OPTIONS with the role's heap flags added, unless the caller already set a heap limit. */
export function relayNodeOptions(role: RelayRole, existing: string | undefined): string {
  if (existing?.includes('--max-old-space-size')) return existing;
  return [existing, relayHeapFlags(role)].filter(Boolean).join(' ');
}

export interface RelayProcess {
  role: RelayRole;
  child: ChildProcess;
  metricsPort: number;
  logFile: string;
  exited: Promise<number | null>;
  /** SIGTERM and wait: the graceful drain. */
  stop(): Promise<number | null>;
  /** SIGKILL: a crash. */
  kill(): Promise<void>;
  metrics(): Promise<string>;
}

export async function startRelayProcess(opts: {
  role: RelayRole;
  env: NodeJS.ProcessEnv;
  metricsPort: number;
  logFile: string;
  readyTimeoutMs?: number;
  /** Another build of the relay (an earlier version, for rolling-deploy tests); default this package. */
  packageRoot?: string;
  /** Node flags before the script, for those NODE_OPTIONS refuses (e.g. `--cpu-prof` for the profiler). */
  execArgv?: string[];
}): Promise<RelayProcess> {
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const out = fs.openSync(opts.logFile, 'a');
  const child = spawn(
    process.execPath,
    [
      ...(opts.execArgv ?? []),
      path.join(opts.packageRoot ?? PACKAGE_ROOT, 'bin', 'poimen-relay.js'),
      opts.role,
    ],
    {
      env: {
        ...opts.env,
        METRICS_PORT: String(opts.metricsPort),
        NODE_OPTIONS: relayNodeOptions(opts.role, opts.env.NODE_OPTIONS),
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
  const base = `http://127.0.0.1:${opts.metricsPort}`;
  const proc: RelayProcess = {
    role: opts.role,
    child,
    metricsPort: opts.metricsPort,
    logFile: opts.logFile,
    exited,
    async stop() {
      if (!gone) child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (!gone) child.kill('SIGKILL');
      await exited;
    },
    async metrics() {
      return (await fetch(`${base}/metrics`)).text();
    },
  };
  const ready = await waitUntil(
    async () => {
      if (gone) return true;
      const res = await fetch(`${base}/readyz`).catch(() => undefined);
      return res?.status === 200;
    },
    opts.readyTimeoutMs ?? 60_000,
    200,
  );
  if (gone || !ready) {
    child.kill('SIGKILL');
    const tail = fs.readFileSync(opts.logFile, 'utf8').slice(-3000);
    throw new Error(
      `${opts.role} ${gone ? 'exited during start-up' : 'not ready in time'}; log ${opts.logFile}:\n${tail}`,
    );
  }
  return proc;
}

/** The value of one sample of Prometheus text, e.g. metricValue(text, 'dlq_messages_sent_total', { topic }). */
export function metricValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}
