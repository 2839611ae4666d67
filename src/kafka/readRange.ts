/**
 * Reads a bounded slice of a topic (per partition: [start, end)) and then stops: the DLQ tools need "read what
 * is there now", which kafkajs (a streaming consumer) has no call for. With `commit`, the group is real and
 * `onMessage` decides what to commit after each record (dlq replay: its position and the metadata of what it
 * handled past it); without, the group is a throwaway that is deleted afterwards, so reading leaves no trace
 * (dlq list). A caller that must be the group's only member (dlq replay) gives `exclusive`: every join is checked
 * before another record is handed over, and neither a join that never comes nor a long `onMessage` (heartbeats go
 * on meanwhile) leaves the read hanging or its membership expired.
 */
import type { Admin, Kafka, KafkaMessage } from 'kafkajs';
import { type ExclusiveRead, JoinGate, exclusiveConsumerSettings } from './joinGate';

export type { ExclusiveRead } from './joinGate';

export interface PartitionRange {
  partition: number;
  start: bigint;
  end: bigint;
}

/** An offset (the next record to read) and its metadata, committed for the group. */
export interface RangeCommit {
  offset: bigint;
  metadata: string;
}

export async function readRange(
  kafka: Kafka,
  admin: Admin,
  opts: {
    topic: string;
    groupId: string;
    ranges: PartitionRange[];
    commit: boolean;
    onMessage: (partition: number, message: KafkaMessage) => Promise<RangeCommit | void>;
    /** Give up (reject) after this long; the consumer is stopped either way. */
    timeoutMs?: number;
    exclusive?: ExclusiveRead;
  },
): Promise<void> {
  const remaining = new Map(opts.ranges.filter((r) => r.end > r.start).map((r) => [r.partition, r]));
  if (remaining.size === 0) return;
  const consumer = kafka.consumer({
    groupId: opts.groupId,
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: 500,
    ...(opts.exclusive ? exclusiveConsumerSettings(opts.exclusive) : {}),
  });
  let finish!: () => void;
  let fail!: (err: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  // Settled before anyone awaits it (a crash while connecting) is not an unhandled rejection: awaited below.
  finished.catch(() => undefined);
  // A crash would otherwise be retried by kafkajs for ever, and `finished` would never settle: a one-shot read
  // fails instead (a broker gone mid-way, a revoked ACL), and its caller reports it.
  consumer.on(consumer.events.CRASH, ({ payload }) => fail(payload.error));
  const timer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(
          () => fail(new Error(`reading ${opts.topic} timed out after ${opts.timeoutMs} ms`)),
          opts.timeoutMs,
        );
  // Partitions outside the ranges are not fetched at all (a big topic would otherwise be read from its start).
  const others = [...(await watermarks(admin, opts.topic)).keys()].filter((p) => !remaining.has(p));
  const gate = opts.exclusive ? new JoinGate(opts.exclusive, fail) : undefined;
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    if (others.length > 0) consumer.pause([{ topic: opts.topic, partitions: others }]);
    gate?.joined(payload.memberAssignment[opts.topic] ?? []);
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: opts.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 1,
      eachMessage: async ({ partition, message, heartbeat }) => {
        await gate?.ready();
        const range = remaining.get(partition);
        const offset = BigInt(message.offset);
        if (!range || offset < range.start) return;
        if (offset >= range.end) {
          remaining.delete(partition);
          if (remaining.size === 0) finish();
          return;
        }
        try {
          const handle = () => opts.onMessage(partition, message);
          const commit = await (gate ? gate.during(handle, heartbeat) : handle());
          if (commit && opts.commit)
            await consumer.commitOffsets([
              { topic: opts.topic, partition, offset: commit.offset.toString(), metadata: commit.metadata },
            ]);
        } catch (err) {
          fail(err);
          throw err;
        }
        if (offset + 1n >= range.end) {
          remaining.delete(partition);
          if (remaining.size === 0) finish();
        }
      },
    });
    for (const r of remaining.values())
      consumer.seek({ topic: opts.topic, partition: r.partition, offset: r.start.toString() });
    await finished;
  } finally {
    if (timer) clearTimeout(timer);
    gate?.close();
    await consumer.disconnect();
    if (!opts.commit) await admin.deleteGroups([opts.groupId]).catch(() => undefined);
  }
}

/** Low and high watermarks per partition, as bigints. */
export async function watermarks(
  admin: Admin,
  topic: string,
): Promise<Map<number, { low: bigint; high: bigint }>> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return new Map(offsets.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
}
