/**
 * How `ingest` and `worker` run: configuration from the environment, the service, its metrics and probes server,
 * then SIGTERM drains (a second signal forces exit). The same for both, so the two commands stay symmetric.
 */
import type { RelayConfig, Role } from '../config';
import { explainRelayConfig } from '../config/effective';
import { type Closeable, type RelayService, type RelayServiceDeps, handleSignals } from '../lifecycle';
import { createLogger } from '../logger';
import { createMetrics } from '../metrics';
import { ObservabilityServer } from '../observability';

export async function serve(
  role: Exclude<Role, 'cli'>,
  create: (cfg: RelayConfig, deps: RelayServiceDeps) => Promise<RelayService>,
): Promise<void> {
  const { cfg, settings, unhonoured } = explainRelayConfig(role);
  const logger = createLogger(`poimen-${role}`, cfg.logLevel, { format: cfg.logFormat });
  // Once, before anything connects: what this process runs with, as `poimen-relay config --role` prints it.
  logger.info({ config: settings }, 'effective configuration');
  if (unhonoured.length > 0)
    logger.warn({ variables: unhonoured }, `OpenTelemetry variables not honoured: ${unhonoured.join(', ')}`);
  const metrics = createMetrics({ role });
  const service = await create(cfg, { logger, metrics });
  const parts: Closeable[] = [{ name: role, close: () => service.close() }];
  // Served before start: /healthz and /readyz answer (503 with the reason) while the start waits on Kafka.
  const http = await ObservabilityServer.start(cfg.metricsPort, metrics.registry, {
    ready: () => service.ready(),
    detail: () => service.readinessDetail() ?? '',
  });
  parts.unshift({ name: 'metrics server', close: () => http.close() });
  await service.start();
  logger.info(
    {
      metricsPort: http.port,
      namespace: cfg.temporal.namespace,
      taskQueue: cfg.temporal.taskQueue,
      ...(role === 'ingester' ? { pattern: cfg.dispatchTopicPattern.source, group: cfg.kafka.groupId } : {}),
    },
    `${role} running`,
  );
  const drained = handleSignals(logger, () => parts);
  await Promise.race([service.done, drained]);
  await drained;
  logger.info(`${role} stopped`);
}
