/**
 * Runs the relay's real processes (`poimen-relay ingest` / `worker`) as children, as an operator would, with
 * per-test topics, group and task queue. Logs go to test-artifacts/ so a failure can be read afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, freePort } from './cli';
import { testServices } from './testEnv';
import { waitFor } from './wait';

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'logs');

export interface RelayProcess {
  role: 'ingest' | 'worker';
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

export interface RelayEnv {
  tenantPattern: string;
  groupId: string;
  taskQueue: string;
  runsApiUrl: string;
  extra?: Record<string, string>;
}

export function relayEnv(e: RelayEnv): NodeJS.ProcessEnv {
  const services = testServices();
  return {
    ...process.env,
    KAFKA_BROKERS: services.kafkaBrokers.join(','),
    TEMPORAL_ADDRESS: services.temporalAddress,
    TEMPORAL_NAMESPACE: services.namespace,
    KAFKA_GROUP_ID: e.groupId,
    TEMPORAL_TASK_QUEUE: e.taskQueue,
    DISPATCH_TOPIC_PATTERN: e.tenantPattern,
    RUNS_API_URL: e.runsApiUrl,
    // Short retries so the suite stays quick; production defaults are SPEC §5's.
    RETRY_INITIAL_INTERVAL_MS: '200',
    RETRY_MAX_INTERVAL_MS: '1000',
    RETRY_MAX_ATTEMPTS: '4',
    RUNS_API_TIMEOUT_MS: '3000',
    POIMEN_TOPIC_REFRESH_MS: '1000',
    POIMEN_LAG_REFRESH_MS: '500',
    LOG_LEVEL: 'info',
    ...e.extra,
  };
}

export async function startRelayProcess(
  role: 'ingest' | 'worker',
  env: NodeJS.ProcessEnv,
  label: string = role,
): Promise<RelayProcess> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const metricsPort = await freePort();
  const logFile = path.join(ARTIFACTS, `${label}-${Date.now()}-${metricsPort}.log`);
  const out = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'poimen-relay.js'), role], {
    env: { ...env, METRICS_PORT: String(metricsPort) },
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const proc: RelayProcess = {
    role,
    child,
    metricsPort,
    logFile,
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
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      return res.text();
    },
  };
  await waitFor(
    async () => {
      if (gone)
        throw new Error(
          `${role} exited during start-up; log: ${logFile}\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`,
        );
      const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
      return res?.status === 200;
    },
    { timeoutMs: 60_000, what: `${role} /readyz`, intervalMs: 200 },
  ).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  return proc;
}

/** The value of one sample line of Prometheus text, e.g. metricValue(text, 'dlq_messages_sent_total', {topic}). */
export function metricValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}
