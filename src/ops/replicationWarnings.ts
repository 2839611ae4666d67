/**
 * `topics apply` declares a replication factor per topic (1 by default, for a local single broker). Below the
 * cluster's own `default.replication.factor` it is almost always a forgotten flag, and a topic with fewer
 * replicas loses records when a broker does: warned about, never refused (a small cluster may mean it).
 */
export interface ReplicationWarnings {
  /** One line for stderr, or absent when nothing is below the default. */
  summary?: string;
  /** The warning of each topic concerned, for --json. */
  byTopic: Record<string, string[]>;
}

export function replicationWarnings(
  specs: readonly { topic: string; replicationFactor?: number }[],
  clusterDefault: number | undefined,
): ReplicationWarnings {
  const byTopic: Record<string, string[]> = {};
  if (clusterDefault === undefined) return { byTopic };
  const below = new Map<number, string[]>();
  for (const { topic, replicationFactor: rf } of specs) {
    // Absent or -1: Kafka applies its default itself.
    if (rf === undefined || rf <= 0 || rf >= clusterDefault) continue;
    below.set(rf, [...(below.get(rf) ?? []), topic]);
    byTopic[topic] = [
      `replication factor ${rf} is below the cluster's default.replication.factor ${clusterDefault}`,
    ];
  }
  if (below.size === 0) return { byTopic };
  const summary = [...below]
    .sort(([a], [b]) => a - b)
    .map(
      ([rf, topics]) =>
        `${topics.length} topic(s) declared with replication factor ${rf}, below the cluster's default.replication.factor ${clusterDefault}: ${topics.join(', ')}`,
    )
    .join('; ');
  return { summary, byTopic };
}
