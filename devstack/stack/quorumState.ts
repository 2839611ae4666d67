import fs from 'node:fs';
import path from 'node:path';

/**
 * The active KRaft controller from the nodes' own quorum state (`__cluster_metadata-0/quorum-state`, rewritten at
 * every election): the leader with the highest epoch. Kafka's client API cannot tell: under KRaft the
 * `controller` of a Metadata/DescribeCluster answer is a random live broker.
 */
export function activeControllerFromQuorumState(kafkaDirs: string[]): number | undefined {
  let best: { leaderId: number; leaderEpoch: number } | undefined;
  for (const dir of kafkaDirs) {
    try {
      const file = path.join(dir, 'data', '__cluster_metadata-0', 'quorum-state');
      const s = JSON.parse(fs.readFileSync(file, 'utf8')) as { leaderId?: number; leaderEpoch?: number };
      if (typeof s.leaderId !== 'number' || s.leaderId < 0 || typeof s.leaderEpoch !== 'number') continue;
      if (!best || s.leaderEpoch > best.leaderEpoch)
        best = { leaderId: s.leaderId, leaderEpoch: s.leaderEpoch };
    } catch {
      // A node being formatted or restarted may have no readable state yet.
    }
  }
  return best?.leaderId;
}
