/**
 * Which partitions hold a record batch that cannot be decoded at the offset a group would read next.
 *
 * kafkajs decodes a whole fetch response at once: one undecodable batch fails the fetch of every partition led
 * by that broker, for every tenant, and the consumer's crash does not say which partition it came from. The
 * probe reads each suspect partition alone (the topic's other partitions paused), one record batch per fetch
 * (a fetch returns at least one whole batch, KIP-74), from the given offset to the log end, with a throwaway
 * consumer in a group of its own that never commits, and reports the offset of the first batch whose decoding
 * fails with a KafkaCodecError. A crash handler can then keep those partitions paused and let the others go on.
 */
import crypto from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { type CodecName, codecErrorIn } from './codecs';

export interface ProbeTarget {
  topic: string;
  partition: number;
  /** The next offset the group would read (its committed offset). */
  offset: string;
}

export interface UndecodableBatch {
  topic: string;
  partition: number;
  /** Where the undecodable batch starts: the offset after the last batch that decoded (or the probe's start). */
  offset: string;
  codec: CodecName;
  reason: string;
}

const QUIET_MS = 3000;

type Outcome =
  { kind: 'decoded' } | { kind: 'undecodable'; offset: string; codec: CodecName; reason: string };

async function probeOne(kafka: Kafka, t: ProbeTarget, high: bigint, timeoutMs: number): Promise<Outcome> {
  const groupId = `poimen-decode-probe-${crypto.randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    retry: { retries: 0 },
    maxBytesPerPartition: 1,
    maxBytes: 1,
    maxWaitTimeInMs: 100,
  });
  let next = BigInt(t.offset);
  let settle: (o: Outcome) => void = () => undefined;
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
  // kafkajs hands no empty batch (a transaction marker) to eachBatch, so a log ending in one is never seen to
  // end: a partition that gives no batch and no codec error for QUIET_MS after its last batch has been read.
  let quiet: NodeJS.Timeout | undefined;
  const stillQuiet = () => {
    clearTimeout(quiet);
    quiet = setTimeout(() => settle({ kind: 'decoded' }), QUIET_MS);
  };
  // Before the first fetch (GROUP_JOIN is emitted between the join and the fetch loop): only the suspect.
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const assigned = e.payload.memberAssignment[t.topic] ?? [];
    const others = assigned.filter((p) => p !== t.partition);
    if (others.length > 0) consumer.pause([{ topic: t.topic, partitions: others }]);
    consumer.seek({ topic: t.topic, partition: t.partition, offset: t.offset });
    stillQuiet();
  });
  let failed: (err: unknown) => void = () => undefined;
  const crashed = new Promise<never>((_, reject) => (failed = reject));
  consumer.on(consumer.events.CRASH, (e) => {
    const codecError = codecErrorIn(e.payload.error);
    if (codecError) {
      settle({
        kind: 'undecodable',
        offset: String(next),
        codec: codecError.codec,
        reason: codecError.reason,
      });
    } else failed(e.payload.error);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [t.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: ({ batch }) => {
        if (batch.partition === t.partition && batch.messages.length > 0) {
          next = BigInt(batch.lastOffset()) + 1n;
          if (next >= high) settle({ kind: 'decoded' });
          else stillQuiet();
        }
        return Promise.resolve();
      },
    });
    return await Promise.race([
      outcome,
      crashed,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `decode probe of ${t.topic}[${t.partition}]@${t.offset}: no answer in ${timeoutMs} ms`,
              ),
            ),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
    clearTimeout(quiet);
    await consumer.disconnect().catch(() => undefined);
  }
}

/**
 * Probes the partitions that have records at or after their offset (the others have nothing to decode), one at
 * a time; rejects when a probe reaches neither the log end nor a codec error in time (Kafka unreachable, or
 * more lag than the probe reads in `timeoutMs`: give it the offsets of a failing fetch, not a whole backlog).
 */
export async function findUndecodableBatches(
  kafka: Kafka,
  targets: ProbeTarget[],
  opts: { timeoutMs?: number } = {},
): Promise<UndecodableBatch[]> {
  const admin = kafka.admin();
  await admin.connect();
  const found: UndecodableBatch[] = [];
  try {
    const highs = new Map<string, bigint>();
    for (const topic of new Set(targets.map((t) => t.topic))) {
      for (const w of await admin.fetchTopicOffsets(topic))
        highs.set(`${topic}/${w.partition}`, BigInt(w.high));
    }
    for (const t of targets) {
      const high = highs.get(`${t.topic}/${t.partition}`) ?? 0n;
      if (high <= BigInt(t.offset)) continue;
      const o = await probeOne(kafka, t, high, opts.timeoutMs ?? 30_000);
      if (o.kind === 'undecodable') {
        found.push({
          topic: t.topic,
          partition: t.partition,
          offset: o.offset,
          codec: o.codec,
          reason: o.reason,
        });
      }
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  return found;
}
