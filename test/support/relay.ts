/**
 * Runs the relay's real processes (`poimen-relay ingest` / `worker`) as children, as an operator would, with
 * per-test topics, group and task queue. Logs go to test-artifacts/ so a failure can be read afterwards.
 */
import path from 'node:path';
import { type RelayProcess, startRelayProcess as start } from '../../devstack/relayProcess';
import { REPO_ROOT, freePort } from './cli';
import { testServices } from './testEnv';

export { metricValue, type RelayProcess } from '../../devstack/relayProcess';

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'logs');

export interface RelayEnv {
  tenantPattern: string;
  groupId: string;
  taskQueue: string;
  runsApiUrl: string;
  extra?: Record<string, string>;
}

/**
 * Only what isolates one test from the next (addresses, topics, group, task queue, runs API) and the log level:
 * every behaviour setting is the shipped default (test/unit/harnessDefaults.test.ts holds this). A suite that
 * needs another value passes it in `extra`, with its reason beside it.
 */
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
