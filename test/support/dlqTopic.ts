/**
 * Reads a DLQ topic from its first offset to its current end (not "until n records arrived"), so a duplicate
 * dead letter shows as well as a missing one.
 */
import type { Kafka } from 'kafkajs';
import { type DlqRecord, parseDlqRecord } from '../../src/contract';
import { readRange, watermarks } from '../../src/kafka/readRange';
import { uniqueName } from './names';

export async function readTopicToEnd(kafka: Kafka, topic: string): Promise<(DlqRecord | undefined)[]> {
  const admin = kafka.admin();
  await admin.connect();
  const records: (DlqRecord | undefined)[] = [];
  try {
    const marks = await watermarks(admin, topic);
    await readRange(kafka, admin, {
      topic,
      groupId: uniqueName('it-dlq-read'),
      commit: false,
      ranges: [...marks].map(([partition, w]) => ({ partition, start: w.low, end: w.high })),
      onMessage: async (_partition, message) => {
        records.push(parseDlqRecord(message.value));
      },
    });
  } finally {
    await admin.disconnect();
  }
  return records;
}

/** How often each id occurs (unparsable records count under '<unparsable>'). */
export function idCounts(records: (DlqRecord | undefined)[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of records)
    counts.set(r?.id ?? '<unparsable>', (counts.get(r?.id ?? '<unparsable>') ?? 0) + 1);
  return counts;
}
