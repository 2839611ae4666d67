/**
 * Runs the relay's real processes (`poimen-relay ingest` / `worker`) as children, as an operator would, with
 * per-test topics, group and task queue. Logs go to test-artifacts/ so a failure can be read afterwards.
 */
import path from 'node:path';
import { type RelayProcess, startRelayProcess as start } from '../../src/devstack/relayProcess';
import { REPO_ROOT, freePort } from './cli';
import { testServices } from './testEnv';

export { metricValue, type RelayProcess } from '../../src/devstack/relayProcess';

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'logs');

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
    // Short retries so the suite stays quick; production defaults are contract §5's.
    RETRY_INITIAL_INTERVAL_MS: '200',
    RETRY_MAX_INTERVAL_MS: '1000',
    RETRY_MAX_ATTEMPTS: '4',
    RUNS_API_TIMEOUT_MS: '3000',
    // The worker's circuit breaker is process-wide: in suites about other things, failures scripted for several
    // keys at once would open it and change each key's scripted sequence of answers. The outage suites
    // (it_outage_*) run it at its default.
    POIMEN_BREAKER_FAILURES: '1000',
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
