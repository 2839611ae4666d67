/**
 * The ingester's parts, built from configuration: a Temporal client (the namespace must have the contract's
 * search attributes), the DLQ producer and the consumer that starts one `dispatch` workflow per record.
 */
import { Client } from '@temporalio/client';
import type { RelayConfig } from '../config';
import { createKafka, holdKafkaAuth } from '../kafka/client';
import { DlqPublisher } from '../kafka/dlqPublisher';
import { type Closeable, type RelayService, type RelayServiceDeps, closeOnce } from '../lifecycle';
import { checkTemporalTls, createClientConnection } from '../temporal/connection';
import { requireSearchAttributes } from '../temporal/searchAttributes';
import { startTracing } from '../tracing/tracing';
import { TenantAdmission } from './admission';
import { Ingester } from './ingester';
import { requireHistoryAccess } from '../temporal/historyAccess';
import { watchClose } from '../temporal/watchClose';
import { listClosed } from '../temporal/closedRuns';
import { VisibilityCloses } from '../temporal/visibilityCloses';
import { visibilityStore } from '../temporal/visibilityStore';
import { dispatchPolicyOf } from './policy';
import { followTenantPauses } from '../kafka/tenantPauses';

export async function createIngester(
  cfg: RelayConfig,
  { logger, metrics }: RelayServiceDeps,
): Promise<RelayService> {
  const parts: Closeable[] = [];
  const close = closeOnce(logger, parts);
  try {
    // First in, last out: the spans of the last records are flushed after everything else has stopped.
    const tracing = cfg.tracing ? startTracing(cfg.tracing) : undefined;
    if (tracing) parts.push({ name: 'tracing', close: () => tracing.close() });
    await checkTemporalTls(cfg.temporal);
    const connection = createClientConnection(cfg.temporal, logger);
    parts.push({ name: 'temporal connection', close: () => connection.close() });
    await requireSearchAttributes(connection, cfg.temporal.namespace, logger);
    // Admission learns closes from history: credentials that may not read it would hold its slots for good.
    if (cfg.ingest.maxOpen > 0 || cfg.ingest.tenantMaxOpen > 0) {
      await requireHistoryAccess(connection, cfg.temporal.namespace);
    }

    // Let go after every Kafka client of this service (reverse order): a token grant then in flight ends.
    const releaseKafkaAuth = holdKafkaAuth(cfg.kafka);
    parts.push({ name: 'Kafka token', close: async () => releaseKafkaAuth() });
    const kafka = createKafka(cfg.kafka, logger);
    const dlq = new DlqPublisher(kafka, metrics, logger.child({ component: 'dlq' }));
    parts.push({ name: 'DLQ producer', close: () => dlq.close() });
    const client = new Client({
      connection,
      namespace: cfg.temporal.namespace,
      // The start's own span, and its context in the workflow's header for the workflow's spans.
      ...(tracing ? { interceptors: tracing.clientInterceptors() } : {}),
    });
    // Every pause an operator set, read before the first record is consumed and followed after (admission holds).
    const pauses = followTenantPauses(kafka, cfg.kafka, {
      logger: logger.child({ component: 'tenant-pauses' }),
      gauge: metrics.tenantPaused,
      onChange: () => admission.wakeAll(),
    });
    parts.push({ name: 'tenant pauses', close: () => pauses.close() });
    const watchOne = (workflowId: string, runId: string, signal: AbortSignal) =>
      watchClose(client, workflowId, runId, signal);
    const admission = new TenantAdmission({
      maxOpen: cfg.ingest.maxOpen,
      tenantMaxOpen: cfg.ingest.tenantMaxOpen,
      watch: watchOne,
      lone: new VisibilityCloses({
        list: (query, nextPageToken) => listClosed(client, query, nextPageToken),
        store: visibilityStore(client),
        watchOne,
        seen: metrics.loneCloses,
        logger: logger.child({ component: 'admission' }),
      }),
      gauge: metrics.tenantOpenDispatches,
      budgetGauge: metrics.openBudget,
      logger: logger.child({ component: 'admission' }),
      paused: (tenant) => pauses.pauseOf(tenant) !== undefined,
    });
    const ingester = new Ingester(
      { kafka: cfg.kafka, dispatchTopicPattern: cfg.dispatchTopicPattern, ingest: cfg.ingest },
      kafka,
      {
        client,
        dlq,
        taskQueue: cfg.temporal.taskQueue,
        maxBytes: cfg.dispatchMaxBytes,
        maxInputBytes: cfg.ingest.maxInputBytes,
        startTimeoutMs: cfg.ingest.startTimeoutMs,
        tenantWeights: cfg.ingest.tenantWeights,
        policy: dispatchPolicyOf(cfg),
      },
      metrics,
      logger,
      { admission },
    );
    let started = false;
    let stopped!: () => void;
    const done = new Promise<void>((resolve) => (stopped = resolve));
    parts.push({ name: 'stopped', close: async () => stopped() });
    return {
      async start() {
        started = true;
        // Registered first: a close() while the start still waits for Kafka stops the ingester too.
        parts.push({ name: 'ingester', close: () => ingester.close() });
        // No record is consumed before every pause is known: a paused tenant must not start one after a restart.
        await pauses.start();
        if (pauses.stopped) return;
        await ingester.start();
      },
      done,
      ready: () => pauses.notYetRead === undefined && ingester.ready(),
      readinessDetail: () => (started ? (pauses.notYetRead ?? ingester.readinessDetail()) : 'not started'),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
