/**
 * Topics, the one home of their creation: the relay's tenant topics (contract §2), `topics apply`, the DLQ
 * publisher's declaration of a missing DLQ topic, the demo, the tools and the test harness all create through
 * ensureTopics (only the stack smoke test calls kafkajs's createTopics itself, to test the broker), and read
 * topic settings through topicConfigs.
 */
import { type Admin, ConfigResourceTypes, type ITopicConfig, KafkaJSError } from 'kafkajs';
import { DLQ_MAX_MESSAGE_BYTES, DLQ_RETENTION_MS, topics } from '../contract';
import { waitUntil } from '../poll';

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
    if (!(await waitUntil(() => allLed(admin, missing), waitMs, 250))) throw err;
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

/** Current values of the named settings of each topic (unset ones absent), e.g. for comparing with a declaration. */
export async function topicConfigs(
  admin: Admin,
  names: string[],
  configNames: string[],
): Promise<Map<string, Map<string, string | null>>> {
  if (names.length === 0) return new Map();
  const res = await admin.describeConfigs({
    includeSynonyms: false,
    resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames })),
  });
  return new Map(
    res.resources.map((r) => [
      r.resourceName,
      new Map(r.configEntries.map((c) => [c.configName, c.configValue as string | null])),
    ]),
  );
}
