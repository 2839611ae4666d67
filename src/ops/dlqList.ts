/** `dlq list` (contract §8): the newest dead letters of a tenant, read without consuming them. */
import { type DlqRecord, topics } from '../contract';
import { NotFoundError } from '../errors';
import { readDeadLetters } from '../kafka/dlqReader';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import { type PartitionRange, watermarks } from '../kafka/readRange';

export interface DlqEntry {
  partition: number;
  offset: string;
  record: DlqRecord | undefined;
  /** A test dead letter written by `dlq send-test` (contract/testDeadLetter.ts). */
  test: boolean;
  /** The raw value when it is not a DLQ record (written by something else). */
  raw?: string;
}

export async function listDlq(
  kafka: KafkaClient,
  admin: KafkaAdmin,
  tenant: string,
  limit: number,
): Promise<DlqEntry[]> {
  const topic = topics.dlq(tenant);
  const marks = await dlqWatermarks(admin, topic);
  // At most `limit` per partition, from the newest end; merged and cut to the newest `limit` overall.
  const ranges: PartitionRange[] = [...marks].map(([partition, { low, high }]) => ({
    partition,
    start: high - BigInt(limit) > low ? high - BigInt(limit) : low,
    end: high,
  }));
  const entries: DlqEntry[] = (
    await readDeadLetters(kafka, admin, topic, { ranges, groupPrefix: 'poimen-relay-dlq-list' })
  ).map(({ key: _key, ...entry }) => entry);
  const ts = (e: DlqEntry) => (e.record ? Date.parse(e.record.timestamp) : 0);
  return entries.sort((a, b) => ts(a) - ts(b)).slice(-limit);
}

/** Watermarks of a tenant's DLQ topic; a tenant without one is "not found", not a stack trace. */
export async function dlqWatermarks(admin: KafkaAdmin, topic: string) {
  await requireDlqTopic(admin, topic);
  return watermarks(admin, topic);
}

export async function requireDlqTopic(admin: KafkaAdmin, topic: string): Promise<void> {
  if (!(await admin.listTopics()).includes(topic)) {
    throw new NotFoundError(`topic ${topic} does not exist (declare it with: poimen-relay topics apply)`);
  }
}
