/**
 * The tests' reads of a DLQ topic, all through the product's reader (src/kafka/dlqReader.ts): a read to the end
 * the topic had when it began (not "until n records arrived"), so a duplicate dead letter shows as well as a
 * missing one, and a wait until a number of dead letters are there. A read whose consumer fails (e.g. the group
 * coordinator still loading after a broker restart) is made again from the start with a fresh group; records are
 * kept by partition and offset.
 */
import type { Admin, Kafka, KafkaMessage } from 'kafkajs';
import type { DlqRecord } from '../../src/contract';
import {
  type DeadLetter,
  byPartitionAndOffset,
  readDeadLetters,
  scanDeadLetters,
} from '../../src/kafka/dlqReader';
import { type PartitionRange, watermarks } from '../../src/kafka/readRange';
import { waitFor } from './wait';

const GROUP_PREFIX = 'it-dlq-read';

export async function readTopicToEnd(kafka: Kafka, topic: string): Promise<(DlqRecord | undefined)[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const letters = await waitFor(
      () => readDeadLetters(kafka, admin, topic, { groupPrefix: GROUP_PREFIX, timeoutMs: 60_000 }),
      { timeoutMs: 120_000, what: `${topic} read to its end` },
    );
    return letters.map((d) => d.record);
  } finally {
    await admin.disconnect();
  }
}

/** A dead letter as read back, with the DLQ topic it was read from and the message as stored there. */
export interface TopicDeadLetter extends DeadLetter {
  topic: string;
  timestampMs: number;
  /** The Kafka message as written (its value byte for byte, its headers), for a check of what was written. */
  message: KafkaMessage;
}

/** One read of `topic`'s `ranges`, in partition and offset order. */
async function readLetters(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  ranges: PartitionRange[],
  timeoutMs: number,
): Promise<TopicDeadLetter[]> {
  const found: TopicDeadLetter[] = [];
  await scanDeadLetters(kafka, admin, topic, { ranges, groupPrefix: GROUP_PREFIX, timeoutMs }, (l, ts, m) =>
    found.push({ ...l, topic, timestampMs: ts, message: m }),
  );
  return found.sort(byPartitionAndOffset);
}

/**
 * Every dead letter of the DLQ topics `dlqTopics` (in that order, each in partition and offset order), once at
 * least `expected` of them are DLQ records (a value that is not one does not count, and is returned with its
 * `raw`): each check reads every topic to the end it had then, so what arrived beyond `expected` by then (a
 * duplicate) is returned too. Throws after `timeoutMs` naming `what` and how many DLQ records were there.
 */
export async function waitForDeadLetters(
  kafka: Kafka,
  dlqTopics: string[],
  expected: number,
  opts: { timeoutMs?: number; what?: string } = {},
): Promise<TopicDeadLetter[]> {
  const { timeoutMs = 60_000, what = `${expected} dead letters in ${dlqTopics.join(', ')}` } = opts;
  const admin = kafka.admin();
  await admin.connect();
  let have = 0;
  try {
    return await waitFor(
      async () => {
        // The topics' extents first (cheap, one topic at a time: kafkajs fails concurrent offset fetches while
        // metadata changes); they bound the dead letters there, so a read is made only once it can be enough.
        const extents: { topic: string; ranges: PartitionRange[] }[] = [];
        for (const topic of dlqTopics) {
          const marks = [...(await watermarks(admin, topic))];
          extents.push({
            topic,
            ranges: marks.map(([partition, m]) => ({ partition, start: m.low, end: m.high })),
          });
        }
        const stored = extents.flatMap((e) => e.ranges).reduce((n, r) => n + Number(r.end - r.start), 0);
        if (stored < expected) return undefined;
        const read = await Promise.all(
          extents.map(({ topic, ranges }) => readLetters(kafka, admin, topic, ranges, timeoutMs)),
        );
        const letters = read.flat();
        have = letters.filter((l) => l.record).length;
        return have >= expected && letters;
      },
      { timeoutMs, intervalMs: 250, what },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; DLQ records there: ${have}`, { cause: err });
  } finally {
    await admin.disconnect();
  }
}

/** How often each id occurs (unparsable records count under '<unparsable>'). */
export function idCounts(records: (DlqRecord | undefined)[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records)
    counts.set(r?.id ?? '<unparsable>', (counts.get(r?.id ?? '<unparsable>') ?? 0) + 1);
  return counts;
}
