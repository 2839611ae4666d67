/**
 * `dlq send-test` (docs/operations.md, "Test the DLQ pipeline"): writes marked test dead letters to a tenant's DLQ
 * through the publisher the ingester and the worker write real ones with (acks from all in-sync replicas, the
 * same retries), so what an operator checks — the topic, `dlq list`, the backlog gauges and their alerts — is
 * the path a real dead letter takes. Replay never re-publishes them; `dlq purge-tests` takes them out of the
 * backlog.
 */
import crypto from 'node:crypto';
import { buildTestDeadLetter, testDeadLetterHeaders, topics } from '../contract';
import { ConfigError } from '../errors';
import { DlqPublisher } from '../kafka/dlqPublisher';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import type { Logger } from '../logger';
import { createMetrics } from '../metrics';
import { requireDlqTopic } from './dlqList';

/** Enough to push `dlq_consumer_lag` past its alert (100); more would be a flood, not a test. */
export const MAX_TEST_DEAD_LETTERS = 1000;

export interface SendTestResult {
  topic: string;
  published: number;
  /** The ids of the test dead letters, in the order written. */
  ids: string[];
}

export function parseTestCount(value: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= MAX_TEST_DEAD_LETTERS))
    throw new ConfigError(
      '--count',
      `= ${JSON.stringify(value)}: must be a whole number from 1 to ${MAX_TEST_DEAD_LETTERS}`,
    );
  return n;
}

export async function sendTestDeadLetters(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  logger: Logger,
  opts: { tenant: string; count: number; onSent?: (id: string) => void },
): Promise<SendTestResult> {
  const topic = topics.dlq(opts.tenant);
  // The publisher would declare a missing DLQ topic; for a test, a mistyped tenant must be an error instead.
  await requireDlqTopic(admin, topic);
  // The CLI serves no /metrics: this registry only satisfies the publisher (docs/operations.md says what moves).
  const publisher = new DlqPublisher(kafka, createMetrics({ defaultMetrics: false }), quieter(logger));
  const ids: string[] = [];
  try {
    for (let index = 1; index <= opts.count; index++) {
      const record = buildTestDeadLetter({
        id: crypto.randomUUID(),
        timestamp: Date.now(),
        tenant: opts.tenant,
        index,
        count: opts.count,
      });
      // Key: §6's "the source record's key" when there is no dispatch key; a test has neither.
      await publisher.publish(record, null, { headers: testDeadLetterHeaders() });
      ids.push(record.id);
      opts.onSent?.(record.id);
    }
  } finally {
    await publisher.close();
  }
  return { topic, published: ids.length, ids };
}

/**
 * The publisher logs each record at info ("dead-lettered"), right for a relay process and noise for a command
 * that reports what it wrote itself; LOG_LEVEL=debug (or trace) still shows them.
 */
function quieter(logger: Logger): Logger {
  return logger.levelVal === 30 ? logger.child({ component: 'dlq' }, { level: 'warn' }) : logger;
}
