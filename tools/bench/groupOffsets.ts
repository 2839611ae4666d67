/**
 * Whether a consumer group has committed every partition of a topic up to its log end: the end-of-drain check of
 * the benchmark and the chaos soak (an uncommitted tail is redelivered on every rebalance).
 */
import type { Kafka } from 'kafkajs';
import { waitUntil } from 'poimen-relay/internal/poll';

export interface PartitionBehind {
  topic: string;
  partition: number;
  committed: number;
  high: number;
}

/** Partitions whose committed offset is not their log end (a partition never written to has nothing to commit). */
export async function partitionsBehind(
  kafka: Kafka,
  groupId: string,
  topicNames: string[],
): Promise<PartitionBehind[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const behind: PartitionBehind[] = [];
    const committed = await admin.fetchOffsets({ groupId, topics: topicNames });
    for (const topic of topicNames) {
      const mine = committed.find((c) => c.topic === topic)?.partitions ?? [];
      for (const p of await admin.fetchTopicOffsets(topic)) {
        const high = Number(p.high);
        const c = Number(mine.find((x) => x.partition === p.partition)?.offset ?? -1);
        if (high > 0 && c !== high) behind.push({ topic, partition: p.partition, committed: c, high });
      }
    }
    return behind;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Polls until the group is at the log end everywhere or `timeoutMs` passes (the last commit trails the last
 * completed start by up to a commit interval); true when it got there.
 */
export async function committedAtLogEnd(
  kafka: Kafka,
  groupId: string,
  topicNames: string[],
  timeoutMs = 30_000,
): Promise<boolean> {
  return waitUntil(
    async () => (await partitionsBehind(kafka, groupId, topicNames).catch(() => undefined))?.length === 0,
    timeoutMs,
    250,
  );
}
