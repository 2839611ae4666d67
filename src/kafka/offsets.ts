/**
 * Offsets as the relay's gauges, hold-probe and DLQ tools need them: where a group stands against each
 * partition's log, what a group committed (with its metadata), and when the record at an offset was written.
 * Offsets are bigints here; Kafka's "nothing committed" (-1) is undefined.
 */
import type { Admin } from 'kafkajs';

export interface PartitionPosition {
  topic: string;
  partition: number;
  /** The group's committed offset (the next record it reads); undefined when it has committed none. */
  committed: bigint | undefined;
  low: bigint;
  /**
   * The log end as a read_committed reader sees it, the last stable offset (kafkajs's ListOffsets default): the
   * high watermark unless a transaction is still open, then the offset of its first record.
   */
  high: bigint;
}

/** The group's committed offset beside the log start and end, for every partition of the topics. */
export async function groupPositions(
  admin: Admin,
  groupId: string,
  topics: string[],
): Promise<PartitionPosition[]> {
  const positions: PartitionPosition[] = [];
  for (const t of await admin.fetchOffsets({ groupId, topics })) {
    const marks = new Map((await admin.fetchTopicOffsets(t.topic)).map((w) => [w.partition, w]));
    for (const p of t.partitions) {
      const w = marks.get(p.partition);
      if (!w) continue;
      positions.push({
        topic: t.topic,
        partition: p.partition,
        committed: BigInt(p.offset) >= 0n ? BigInt(p.offset) : undefined,
        low: BigInt(w.low),
        high: BigInt(w.high),
      });
    }
  }
  return positions;
}

/** A group's commits on one topic as Kafka keeps them: offset text ('-1': none) and commit metadata. */
export async function committedOffsets(
  admin: Admin,
  groupId: string,
  topic: string,
): Promise<Map<number, { offset: string; metadata: string | null }>> {
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map(committed?.partitions.map((p) => [p.partition, p]) ?? []);
}

/**
 * The (second-resolution) timestamp of the record at `offset`: the latest t whose first offset at/after t is
 * <= offset, found by bisecting the broker's time index (offsets for a timestamp), so no record is read.
 */
export async function recordTimestampAt(
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
