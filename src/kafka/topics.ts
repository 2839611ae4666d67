/**
 * Topics, the one home of their creation: the relay's tenant topics (contract §2), `topics apply`, the DLQ
 * publisher's declaration of a missing DLQ topic, the demo, the tools and the test harness all create through
 * ensureTopics (only the stack smoke test calls kafkajs's createTopics itself, to test the broker), and read
 * topic settings through topicConfigs. ensureTopics gives each topic the replication of specsForCluster, so a
 * topic declared anywhere without a replication factor is replicated like one declared by `topics apply`.
 */
import { type Admin, ConfigResourceTypes, type ITopicConfig, KafkaJSError } from 'kafkajs';
import { DLQ_MAX_MESSAGE_BYTES, DLQ_RETENTION_MS, topics } from '../contract';
import { waitUntil } from '../poll';

export interface TenantTopicOptions {
  partitions?: number;
  /** Absent: replicationFor decides from the broker count when the topics are created. */
  replicationFactor?: number;
}

export interface Replication {
  replicationFactor: number;
  /** Absent: the topic keeps the broker's default (one replica has nothing to wait for). */
  minInsyncReplicas?: number;
}

/** The replicas a topic gets when its declaration names none, on a cluster of three or more live brokers. */
const TARGET_REPLICATION_FACTOR = 3;

/**
 * A topic's replication on a cluster where `brokerCount` brokers are live. A declared factor wins (a small cluster
 * may mean it; `topics apply` warns when it is below the cluster's default). Undeclared: 3 where three brokers
 * answer, else -1, the broker's own `default.replication.factor` (the live count is not the cluster's size: a
 * topic made while a broker is down must not be made with fewer replicas for ever; Kafka refuses the creation
 * instead, and it is retried). With 3 or more replicas an acks=all write waits for 2 of them (min ISR 2): one
 * broker lost neither loses an acknowledged record nor stops writes. Fewer replicas keep the broker's min ISR.
 */
export function replicationFor(brokerCount: number, declaredRf?: number): Replication {
  const replicationFactor =
    declaredRf !== undefined && declaredRf > 0
      ? declaredRf
      : brokerCount >= TARGET_REPLICATION_FACTOR
        ? TARGET_REPLICATION_FACTOR
        : -1;
  return {
    replicationFactor,
    minInsyncReplicas: replicationFactor >= 3 ? 2 : undefined,
  };
}

const MIN_INSYNC_REPLICAS = 'min.insync.replicas';

/** The specs as they are created on a cluster of `brokerCount` brokers; a declared min ISR is kept. */
export function specsForCluster(specs: ITopicConfig[], brokerCount: number): ITopicConfig[] {
  return specs.map((spec) => {
    const { replicationFactor, minInsyncReplicas } = replicationFor(brokerCount, spec.replicationFactor);
    const entries = spec.configEntries ?? [];
    const ownMinIsr = entries.some((c) => c.name === MIN_INSYNC_REPLICAS);
    return {
      ...spec,
      replicationFactor,
      ...(minInsyncReplicas === undefined || ownMinIsr
        ? {}
        : { configEntries: [...entries, { name: MIN_INSYNC_REPLICAS, value: String(minInsyncReplicas) }] }),
    };
  });
}

/** specsForCluster with the broker count read from the cluster, and only when some spec leaves its factor open. */
export async function specsForThisCluster(admin: Admin, specs: ITopicConfig[]): Promise<ITopicConfig[]> {
  const open = specs.some((s) => s.replicationFactor === undefined || s.replicationFactor <= 0);
  // Not read when every spec declares its factor: the count decides nothing then.
  const brokers = open ? (await admin.describeCluster()).brokers.length : 0;
  return specsForCluster(specs, brokers);
}

/** Settings of a `.dispatch.dlq` topic: 14 days of dead letters, each as large as a refused record can make it. */
export const DLQ_TOPIC_CONFIG = [
  { name: 'retention.ms', value: String(DLQ_RETENTION_MS) },
  { name: 'max.message.bytes', value: String(DLQ_MAX_MESSAGE_BYTES) },
];

/** The three topics of a tenant (contract §2). */
export function tenantTopicSpecs(tenant: string, opts: TenantTopicOptions = {}): ITopicConfig[] {
  const base = {
    numPartitions: opts.partitions ?? 3,
    ...(opts.replicationFactor === undefined ? {} : { replicationFactor: opts.replicationFactor }),
  };
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
 * Creates what is missing, replicated as specsForCluster says; topics that exist already count as success.
 * Returns the names created. A broker that has just restarted can accept the creation and still answer "unknown
 * topic" to the leader check for a few seconds, so retriable errors are followed by a bounded wait for every
 * partition to have a leader.
 */
export async function ensureTopics(admin: Admin, specs: ITopicConfig[], waitMs = 30_000): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const absent = specs.filter((s) => !existing.has(s.topic));
  if (absent.length === 0) return [];
  const missing = await specsForThisCluster(admin, absent);
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
