/** `poimen-relay ingest`: wiring only. */
import { Client } from '@temporalio/client';
import { Command } from 'commander';
import { loadRelayConfig } from '../config';
import { Ingester } from '../ingest/ingester';
import { createKafka } from '../kafka/client';
import { DlqPublisher } from '../kafka/dlqPublisher';
import { type Closeable, handleSignals } from '../lifecycle';
import { createLogger } from '../logger';
import { createMetrics } from '../metrics';
import { ObservabilityServer } from '../observability';
import { checkTemporalTls, createClientConnection } from '../temporal/connection';
import { requireSearchAttributes } from '../temporal/searchAttributes';

export function ingestCommand(): Command {
  return new Command('ingest')
    .description('drain dispatch topics into dispatch workflows')
    .action(async () => {
      const cfg = loadRelayConfig('ingester');
      const logger = createLogger('poimen-ingester', cfg.logLevel);
      const metrics = createMetrics({ role: 'ingester' });
      const parts: Closeable[] = [];
      await checkTemporalTls(cfg.temporal);
      const connection = createClientConnection(cfg.temporal);
      parts.push({ name: 'temporal connection', close: () => connection.close() });
      await requireSearchAttributes(connection, cfg.temporal.namespace, logger);

      const kafka = createKafka(cfg.kafka, logger);
      const dlq = new DlqPublisher(kafka, metrics, logger.child({ component: 'dlq' }));
      parts.push({ name: 'DLQ producer', close: () => dlq.close() });
      const { retry, runsApi } = cfg;
      const ingester = new Ingester(
        cfg,
        kafka,
        {
          client: new Client({ connection, namespace: cfg.temporal.namespace }),
          dlq,
          taskQueue: cfg.temporal.taskQueue,
          maxBytes: cfg.dispatchMaxBytes,
          maxInputBytes: cfg.ingest.maxInputBytes,
          startTimeoutMs: cfg.ingest.startTimeoutMs,
          policy: { ...retry, attemptTimeoutMs: runsApi.timeoutMs },
        },
        metrics,
        logger,
        cfg.ingest,
      );
      const http = await ObservabilityServer.start(cfg.metricsPort, metrics.registry, {
        ready: () => ingester.ready(),
        detail: () => ingester.readinessDetail(),
      });
      parts.push({ name: 'metrics server', close: () => http.close() });
      await ingester.start();
      parts.push({ name: 'ingester', close: () => ingester.close() });
      logger.info(
        { pattern: cfg.dispatchTopicPattern.source, group: cfg.kafka.groupId, metricsPort: http.port },
        'ingester running',
      );
      await handleSignals(logger, () => parts);
      logger.info('ingester stopped');
    });
}
