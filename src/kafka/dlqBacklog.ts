/** The DLQ backlog gauges (contract §7): `dlq_consumer_lag` and `dlq_oldest_message_age_seconds` per DLQ topic. */
import { loadProgress } from './dlqProgress';
import { recordTimestampAt } from './offsets';
import type { KafkaAdmin } from './port';
import { watermarks } from './readRange';

/**
 * How long a record's dating is reused. The oldest pending record changes only when it is replayed or discarded;
 * dating it again each refresh cost ~32 ListOffsets per pending partition per ingester every POIMEN_DLQ_REFRESH_MS.
 * Not for ever: a topic made anew has other records at the same offsets.
 */
const DATED_FOR_MS = 10 * 60_000;

/** Per admin client (one per ingester), per partition: the record last dated and when. */
const dated = new WeakMap<
  KafkaAdmin,
  Map<string, { offset: bigint; ts: number | undefined; atMs: number }>
>();

async function timestampAt(
  admin: KafkaAdmin,
  topic: string,
  partition: number,
  offset: bigint,
  nowMs: number,
): Promise<number | undefined> {
  let memo = dated.get(admin);
  if (!memo) dated.set(admin, (memo = new Map()));
  const key = `${topic}/${partition}`;
  const known = memo.get(key);
  if (known && known.offset === offset && nowMs - known.atMs < DATED_FOR_MS) return known.ts;
  const ts = await recordTimestampAt(admin, topic, partition, offset, nowMs);
  // An undated record is asked about again next time: a gauge at 0 would hide the backlog's age.
  if (ts === undefined) memo.delete(key);
  else memo.set(key, { offset, ts, atMs: nowMs });
  return ts;
}

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
    const ts = await timestampAt(admin, dlqTopic, partition, first, nowMs);
    if (ts !== undefined && (oldestMs === undefined || ts < oldestMs)) oldestMs = ts;
  }
  return {
    lag: Number(lag),
    oldestAgeSeconds: oldestMs === undefined ? 0 : Math.max(0, (nowMs - oldestMs) / 1000),
  };
}
