/**
 * Reading dead letters back (contract §6), the one home of it: `dlq list` and `dlq replay`, the demo's report,
 * and the chaos soak and the tests that check what was dead-lettered all read `.dispatch.dlq` records here.
 * A read is of what is there when it begins (per partition up to the end it had then), through a throwaway
 * group that commits nothing and is deleted afterwards, so reading leaves the DLQ and its replay group as they
 * were. Each record is kept once by partition and offset, parsed when it is a DLQ record.
 */
import crypto from 'node:crypto';
import type { Admin, Kafka, KafkaMessage } from 'kafkajs';
import { type DlqRecord, isTestDeadLetter, parseDlqRecord } from '../contract';
import { type PartitionRange, readRange, watermarks } from './readRange';

export interface DeadLetter {
  partition: number;
  offset: string;
  /** The Kafka key the dead letter was written with. */
  key: Buffer | null;
  /** Undefined when the value is not a DLQ record (written by something else). */
  record: DlqRecord | undefined;
  /** A test dead letter (`dlq send-test`): never replayed, taken out of the backlog by `dlq purge-tests`. */
  test: boolean;
  /** The raw value when it is not a DLQ record. */
  raw?: string;
}

/** One consumed DLQ message as a dead letter. */
export function deadLetterOf(partition: number, message: KafkaMessage): DeadLetter {
  const record = parseDlqRecord(message.value);
  return {
    partition,
    offset: message.offset,
    key: message.key,
    record,
    test: isTestDeadLetter(record, message.headers),
    ...(record ? {} : { raw: message.value?.toString('utf8') ?? '' }),
  };
}

/**
 * The dead letters in `ranges` of a DLQ topic (default: every partition from its log start to its end now), in
 * partition and offset order. Rejects when its consumer crashes or the read does not finish within `timeoutMs`
 * (when given); the caller decides whether to read again.
 */
export async function readDeadLetters(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  opts: ScanOptions = {},
): Promise<DeadLetter[]> {
  const found: DeadLetter[] = [];
  await scanDeadLetters(kafka, admin, topic, opts, (letter) => found.push(letter));
  return found.sort(byPartitionAndOffset);
}

/** Dead letters in partition and offset order (readDeadLetters' order), for a sort. */
export function byPartitionAndOffset(a: DeadLetter, b: DeadLetter): number {
  return a.partition !== b.partition
    ? a.partition - b.partition
    : Number(BigInt(a.offset) - BigInt(b.offset));
}

export interface ScanOptions {
  ranges?: PartitionRange[];
  groupPrefix?: string;
  timeoutMs?: number;
}

/**
 * As readDeadLetters, handing each dead letter (once, with its Kafka timestamp in ms and the message as stored)
 * to `each` as it is read, in no particular order across partitions, so a caller that only aggregates (`dlq
 * summary`) keeps no record, and one that checks what was written (a test: the bytes, the headers) reads them
 * here too.
 */
export async function scanDeadLetters(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  opts: ScanOptions,
  each: (letter: DeadLetter, timestampMs: number, message: KafkaMessage) => void,
): Promise<void> {
  const ranges =
    opts.ranges ??
    [...(await watermarks(admin, topic))].map(([partition, { low, high }]) => ({
      partition,
      start: low,
      end: high,
    }));
  // A record handed over twice (a rebalance mid-read) is counted once.
  const seen = new Set<string>();
  await readRange(kafka, admin, {
    topic,
    groupId: `${opts.groupPrefix ?? 'poimen-relay-dlq-read'}-${crypto.randomUUID()}`,
    ranges,
    commit: false,
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
    onMessage: async (partition, message) => {
      const at = `${partition}/${message.offset}`;
      if (seen.has(at)) return;
      seen.add(at);
      each(deadLetterOf(partition, message), Number(message.timestamp), message);
    },
  });
}
