/** The DLQ backlog gauges (contract §7): `dlq_consumer_lag` and `dlq_oldest_message_age_seconds` per DLQ topic. */
import { recordTimestampAt } from '../kafka/offsets';
import type { KafkaAdmin } from '../kafka/port';
import { watermarks } from '../kafka/readRange';
import { loadProgress } from './dlqProgress';

/**
 * DLQ backlog per topic for the metrics: records not yet replayed (or discarded) by the replay group, and the
 * age of the oldest of them. The age comes from the broker's time index (offsets for a timestamp), so no record is read.
 */
export async function dlqBacklog(
  admin: KafkaAdmin,
  dlqTopic: string,
  nowMs: number,
): Promise<{ lag: number; oldestAgeSeconds: number }> {
  const marks = await watermarks(admin, dlqTopic);
  const progress = await loadProgress(admin, dlqTopic, marks);
  let lag = 0n;
  let oldestMs: number | undefined;
  for (const [partition, { low, high }] of marks) {
    const p = progress.get(partition)!;
    lag += p.pending(low, high);
    // Offsets grow with time within a partition: the first record not yet handled is its oldest.
    const first = p.firstPending(low, high);
    if (first === undefined) continue;
    const ts = await recordTimestampAt(admin, dlqTopic, partition, first, nowMs);
    if (ts !== undefined && (oldestMs === undefined || ts < oldestMs)) oldestMs = ts;
  }
  return {
    lag: Number(lag),
    oldestAgeSeconds: oldestMs === undefined ? 0 : Math.max(0, (nowMs - oldestMs) / 1000),
  };
}
