/** The DLQ backlog gauges (contract §7): `dlq_consumer_lag` and `dlq_oldest_message_age_seconds` per DLQ topic. */
import type { Admin } from 'kafkajs';
import { watermarks } from '../kafka/readRange';
import { loadProgress } from './dlqProgress';

/**
 * DLQ backlog per topic for the metrics: records not yet replayed (or discarded) by the replay group, and the
 * age of the oldest of them. The age comes from the broker's time index (offsets for a timestamp), so no record is read.
 */
export async function dlqBacklog(
  admin: Admin,
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
    const ts = await timestampAt(admin, dlqTopic, partition, first, nowMs);
    if (ts !== undefined && (oldestMs === undefined || ts < oldestMs)) oldestMs = ts;
  }
  return {
    lag: Number(lag),
    oldestAgeSeconds: oldestMs === undefined ? 0 : Math.max(0, (nowMs - oldestMs) / 1000),
  };
}

/** The (second-resolution) timestamp of the record at `offset`: the latest t whose first offset at/after t is <= offset. */
async function timestampAt(
  admin: Admin,
  topic: string,
  partition: number,
  offset: bigint,
  nowMs: number,
): Promise<number | undefined> {
  const firstOffsetAt = async (ts: number) => {
    const res = await admin.fetchTopicOffsetsByTimestamp(topic, ts);
    const p = res.find((x) => x.partition === partition);
    return p && BigInt(p.offset) >= 0n ? BigInt(p.offset) : undefined;
  };
  let lo = 0;
  let hi = Math.floor(nowMs / 1000) + 1;
  if ((await firstOffsetAt(lo * 1000)) === undefined) return undefined;
  // Invariant: firstOffsetAt(lo) <= offset < firstOffsetAt(hi) (or none at hi).
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const first = await firstOffsetAt(mid * 1000);
    if (first !== undefined && first <= offset) lo = mid;
    else hi = mid;
  }
  return lo * 1000;
}
