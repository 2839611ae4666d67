/**
 * Reads a DLQ topic from its first offset to the end it had when the read began (not "until n records
 * arrived"), so a duplicate dead letter shows as well as a missing one, through the product's reader
 * (src/kafka/dlqReader.ts). A read whose consumer fails (e.g. the group coordinator still loading after a broker
 * restart) is made again from the start with a fresh group; records are kept by partition and offset.
 */
import type { Kafka } from 'kafkajs';
import type { DlqRecord } from '../../src/contract';
import { readDeadLetters } from '../../src/kafka/dlqReader';
import { waitFor } from './wait';

export async function readTopicToEnd(kafka: Kafka, topic: string): Promise<(DlqRecord | undefined)[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const letters = await waitFor(
      () => readDeadLetters(kafka, admin, topic, { groupPrefix: 'it-dlq-read', timeoutMs: 60_000 }),
      { timeoutMs: 120_000, what: `${topic} read to its end` },
    );
    return letters.map((d) => d.record);
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
