/**
 * DLQ scenarios on a harness's one-partition topics, for the tests of the DLQ commands: real dead letters made
 * in a known order, every stored record read back with its Kafka headers, and what a replay re-published.
 */
import type { Admin, KafkaMessage } from 'kafkajs';
import { type DlqRecord, parseDlqRecord, topics } from '../../src/contract';
import { readRange, watermarks } from '../../src/kafka/readRange';
import { waitForDeadLetters } from './dlqTopic';
import { uniqueName } from './names';
import type { Harness } from './relayHarness';
import { waitFor } from './wait';

export interface Stored {
  offset: number;
  timestampMs: number;
  headers: Record<string, string>;
  value: Buffer | null;
  /** The value parsed as a §6 record; undefined when it is not one. */
  record: DlqRecord | undefined;
}

const textHeaders = (m: KafkaMessage): Record<string, string> =>
  Object.fromEntries(Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(v)]));

/**
 * Every record of a one-partition topic that is not a DLQ topic (a `.dispatch`) up to its current end, with its
 * Kafka headers, in offset order. A DLQ topic is read with readDeadLetterStore.
 */
export async function readAll(hh: Harness, a: Admin, topic: string): Promise<Stored[]> {
  const marks = await watermarks(a, topic);
  const out: Stored[] = [];
  await readRange(hh.kafka, a, {
    topic,
    groupId: uniqueName('it-read-all'),
    ranges: [...marks].map(([partition, { low, high }]) => ({ partition, start: low, end: high })),
    commit: false,
    onMessage: async (_partition, m) => {
      out.push({
        offset: Number(m.offset),
        timestampMs: Number(m.timestamp),
        headers: textHeaders(m),
        value: m.value,
        record: parseDlqRecord(m.value),
      });
    },
  });
  return out.sort((x, y) => x.offset - y.offset);
}

/**
 * Every dead letter of a one-partition DLQ topic once at least `expected` are there (default: as it is now), as
 * stored, with its Kafka headers, in offset order: read through the product's reader (dlqTopic.ts).
 */
export async function readDeadLetterStore(hh: Harness, topic: string, expected = 0): Promise<Stored[]> {
  const letters = await waitForDeadLetters(hh.kafka, [topic], expected);
  return letters.map((l) => ({
    offset: Number(l.offset),
    timestampMs: l.timestampMs,
    headers: textHeaders(l.message),
    value: l.message.value,
    record: l.record,
  }));
}

/** Dead-letters each dispatch in turn (the API refuses it with 422), so DLQ offsets follow the order given. */
export async function deadLetter(hh: Harness, a: Admin, keys: string[]): Promise<void> {
  const dlq = topics.dlq(hh.tenant);
  for (const k of keys) {
    const before = Number((await watermarks(a, dlq)).get(0)!.high);
    hh.api.scriptFor(k, { kind: 'status', status: 422 });
    await hh.publish(hh.dispatchValue(k));
    await waitFor(async () => Number((await watermarks(a, dlq)).get(0)!.high) === before + 1, {
      what: `the dead letter of ${k}`,
    });
  }
}

/** DLQ ids re-published to `.dispatch` (the `poimen-replay-of` header), with how often. */
export async function republished(hh: Harness, a: Admin): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const r of await readAll(hh, a, topics.dispatch(hh.tenant))) {
    const of = r.headers['poimen-replay-of'];
    if (of) counts[of] = (counts[of] ?? 0) + 1;
  }
  return counts;
}
