/**
 * Runs the relay's real processes (`poimen-relay ingest` / `worker`) as children, as an operator would, with
 * per-test topics, group and task queue. Logs go to test-artifacts/ so a failure can be read afterwards.
 */
import path from 'node:path';
import { ENV_VARS } from '../../src/config/envTable';
import { type RelayProcess, startRelayProcess as start } from '../../devstack/relayProcess';
import { REPO_ROOT, freePort } from './cli';
import { testServices } from './testEnv';

export { metricValue, type RelayProcess } from '../../devstack/relayProcess';

/**
 * The sum of every sample of `name` whose labels include `labels` (undefined when none matches): a counter split
 * by more labels than a test names, such as `dlq_messages_sent_total` per topic over its types and error classes.
 */
export function metricSum(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'logs');

export interface RelayEnv {
  tenantPattern: string;
  groupId: string;
  taskQueue: string;
  runsApiUrl: string;
  extra?: Record<string, string>;
}

/**
 * The relay's behaviour variables (the env table's rows the ingester or worker reads, but the connection ones):
 * never inherited from the shell, so a developer's exported RETRY_MAX_ATTEMPTS does not change every suite. The
 * connection rows (addresses, TLS, credentials) pass through: the external-stack mode reaches its Kafka and
 * Temporal with them. A row named `<PREFIX><NAME>` stands for every variable with that prefix.
 */
const NOT_INHERITED = ENV_VARS.filter(
  (v) => !v.connection && (v.readBy.includes('ingest') || v.readBy.includes('worker')),
).map((v) => v.name);

function shellWithoutRelayBehaviour(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of NOT_INHERITED) {
    const prefix = name.endsWith('<NAME>') ? name.slice(0, -'<NAME>'.length) : undefined;
    if (prefix === undefined) delete env[name];
    else for (const key of Object.keys(env)) if (key.startsWith(prefix)) delete env[key];
  }
  return env;
}

/**
 * Only what isolates one test from the next (addresses, topics, group, task queue, runs API) and the log level:
 * every behaviour setting is the shipped default, whatever the shell exports (test/unit/harnessDefaults.test.ts
 * holds this). A suite that
 * needs another value passes it in `extra`, with its reason beside it.
 */
export function relayEnv(e: RelayEnv): NodeJS.ProcessEnv {
  const services = testServices();
  return {
    ...shellWithoutRelayBehaviour(),
    KAFKA_BROKERS: services.kafkaBrokers.join(','),
    TEMPORAL_ADDRESS: services.temporalAddress,
    TEMPORAL_NAMESPACE: services.namespace,
    KAFKA_GROUP_ID: e.groupId,
    TEMPORAL_TASK_QUEUE: e.taskQueue,
    DISPATCH_TOPIC_PATTERN: e.tenantPattern,
    RUNS_API_URL: e.runsApiUrl,
    LOG_LEVEL: 'info',
    ...e.extra,
  };
}

export async function startRelayProcess(
  role: 'ingest' | 'worker',
  env: NodeJS.ProcessEnv,
  label: string = role,
  packageRoot?: string,
  /** Told the metrics port before the process is ready: a test can read /readyz while it is not. */
  onMetricsPort?: (port: number) => void,
): Promise<RelayProcess> {
  const metricsPort = await freePort();
  onMetricsPort?.(metricsPort);
  return start({
    role,
    env,
    metricsPort,
    ...(packageRoot ? { packageRoot } : {}),
    logFile: path.join(ARTIFACTS, `${label}-${Date.now()}-${metricsPort}.log`),
  });
}
