/**
 * Reads a DLQ topic from its first offset to the end it had when the read began (not "until n records
 * arrived"), so a duplicate dead letter shows as well as a missing one. A consumer of a fresh group, from the
 * beginning, without seeks or commits: a consumer restarted by kafkajs (e.g. the group coordinator still
 * loading after a broker restart) reads again from the start, and records are kept by partition and offset.
 */
import type { Kafka } from 'kafkajs';
import { type DlqRecord, parseDlqRecord } from '../../src/contract';
import { uniqueName } from './names';
import { waitFor } from './wait';

export async function readTopicToEnd(kafka: Kafka, topic: string): Promise<(DlqRecord | undefined)[]> {
  const admin = kafka.admin();
  await admin.connect();
  const marks = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const ends = new Map(
    marks.filter((m) => BigInt(m.high) > BigInt(m.low)).map((m) => [m.partition, BigInt(m.high)]),
  );
  if (ends.size === 0) return [];
  const records = new Map<string, DlqRecord | undefined>();
  const reached = new Map<number, bigint>();
  const consumer = kafka.consumer({ groupId: uniqueName('it-dlq-read'), maxWaitTimeInMs: 500 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const offset = BigInt(message.offset);
        if (offset >= (ends.get(partition) ?? 0n)) return;
        records.set(`${partition}/${offset}`, parseDlqRecord(message.value));
        if (offset + 1n > (reached.get(partition) ?? 0n)) reached.set(partition, offset + 1n);
      },
    });
    await waitFor(() => [...ends].every(([p, end]) => (reached.get(p) ?? 0n) >= end), {
      timeoutMs: 120_000,
      what: `${topic} read to its end`,
    });
  } finally {
    await consumer.disconnect();
  }
  return [...records.values()];
}

/** How often each id occurs (unparsable records count under '<unparsable>'). */
export function idCounts(records: (DlqRecord | undefined)[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records)
    counts.set(r?.id ?? '<unparsable>', (counts.get(r?.id ?? '<unparsable>') ?? 0) + 1);
  return counts;
}
