/**
 * Reads a bounded slice of a topic (per partition: [start, end)) and then stops: the DLQ tools need "read what
 * is there now", which kafkajs (a streaming consumer) has no call for. With `commit`, the group is real and
 * `onMessage` decides what to commit after each record (dlq replay: its position and the metadata of what it
 * handled past it); without, the group is a throwaway that is deleted afterwards, so reading leaves no trace
 * (dlq list). A caller that must be the group's only member (dlq replay) gives `exclusive`: every join is checked
 * before another record is handed over, and neither a join that never comes nor a long `onMessage` (heartbeats go
 * on meanwhile) leaves the read hanging or its membership expired.
 *
 * kafkajs has no seek before a join: `seek` needs the consumer group its `run` makes, which a crash at the first
 * join takes away again (a broker no group has used yet: its coordinator loads while the read joins). So every
 * join seeks the partitions it got to the next record this read has not handed over yet, and a crash while the
 * group coordinator is not ready lets kafkajs restart and join again, for COORDINATOR_WAIT_MS at most.
 */
import type { Admin, Kafka, KafkaMessage } from 'kafkajs';
import { COORDINATOR_WAIT_MS } from './coordinator';
import { groupCoordinatorNotReady } from './errors';
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
    /** Give up (reject with its reason) once it aborts, at the read's next step; the consumer is stopped either way. */
    signal?: AbortSignal;
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
  // fails instead (a broker gone mid-way, a revoked ACL), and its caller reports it. Only a coordinator that is not
  // ready yet is waited for, a bounded while: kafkajs restarts, joins again, and that join seeks.
  const began = Date.now();
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    const loading = groupCoordinatorNotReady(payload.error) && Date.now() - began < COORDINATOR_WAIT_MS;
    if (!(payload.restart && loading)) fail(payload.error);
  });
  // Partitions outside the ranges are not fetched at all (a big topic would otherwise be read from its start).
  const others = [...(await watermarks(admin, opts.topic)).keys()].filter((p) => !remaining.has(p));
  const gate = opts.exclusive ? new JoinGate(opts.exclusive, fail) : undefined;
  // Per partition, the next offset to hand over: where each join (the first, a restart's, a rebalance's) seeks.
  const next = new Map([...remaining.values()].map((r) => [r.partition, r.start]));
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    if (others.length > 0) consumer.pause([{ topic: opts.topic, partitions: others }]);
    for (const partition of payload.memberAssignment[opts.topic] ?? []) {
      const offset = remaining.has(partition) ? next.get(partition) : undefined;
      if (offset !== undefined) consumer.seek({ topic: opts.topic, partition, offset: offset.toString() });
    }
    gate?.joined(payload.memberAssignment[opts.topic] ?? []);
  });
  const timer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(
          () => fail(new Error(`reading ${opts.topic} timed out after ${opts.timeoutMs} ms`)),
          opts.timeoutMs,
        );
  const stop = () => fail(opts.signal?.reason);
  opts.signal?.addEventListener('abort', stop, { once: true });
  try {
    // A caller that gave up stops the read between steps; a group join under way is waited out (a consumer
    // disconnected while it connects or joins can keep its sockets), then the consumer leaves and its group goes.
    opts.signal?.throwIfAborted();
    await consumer.connect();
    opts.signal?.throwIfAborted();
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
        next.set(partition, offset + 1n);
        if (offset + 1n >= range.end) {
          remaining.delete(partition);
          if (remaining.size === 0) finish();
        }
      },
    });
    await finished;
  } finally {
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', stop);
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
