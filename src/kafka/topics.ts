import { type Admin, type ITopicConfig, KafkaJSError } from 'kafkajs';
import { DLQ_MAX_MESSAGE_BYTES, DLQ_RETENTION_MS, topics } from '../contract';

export interface TenantTopicOptions {
  partitions?: number;
  replicationFactor?: number;
}

/** Settings of a `.dispatch.dlq` topic: 14 days of dead letters, each as large as a refused record can make it. */
export const DLQ_TOPIC_CONFIG = [
  { name: 'retention.ms', value: String(DLQ_RETENTION_MS) },
  { name: 'max.message.bytes', value: String(DLQ_MAX_MESSAGE_BYTES) },
];

/** The three topics of a tenant (contract §2). */
export function tenantTopicSpecs(tenant: string, opts: TenantTopicOptions = {}): ITopicConfig[] {
  const base = { numPartitions: opts.partitions ?? 3, replicationFactor: opts.replicationFactor ?? 1 };
  return [
    { topic: topics.dispatch(tenant), ...base },
    { topic: topics.events(tenant), ...base },
    {
      topic: topics.dlq(tenant),
      ...base,
      configEntries: DLQ_TOPIC_CONFIG,
    },
  ];
}

/**
 * Creates what is missing; topics that exist already count as success. Returns the names created. A broker
 * that has just restarted can accept the creation and still answer "unknown topic" to the leader check for a
 * few seconds, so retriable errors are followed by a bounded wait for every partition to have a leader.
 */
export async function ensureTopics(admin: Admin, specs: ITopicConfig[], waitMs = 30_000): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({ topics: missing, waitForLeaders: true });
  } catch (err) {
    // Another process may have created some in between ("already exists" is not retriable, yet the topics
    // may still be electing leaders), or the broker is slow to show them: both end once every partition is led.
    const now = new Set(await admin.listTopics().catch(() => [] as string[]));
    const racedOrSlow =
      (err instanceof KafkaJSError && err.retriable) || missing.every((s) => now.has(s.topic));
    if (!racedOrSlow) throw err;
    const deadline = Date.now() + waitMs;
    while (!(await allLed(admin, missing))) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return missing.map((s) => s.topic);
}

async function allLed(admin: Admin, specs: ITopicConfig[]): Promise<boolean> {
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: specs.map((s) => s.topic) });
    return (
      topics.length === specs.length &&
      topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))
    );
  } catch {
    return false;
  }
}
