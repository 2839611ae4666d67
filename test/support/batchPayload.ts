/**
 * A kafkajs eachBatch payload for unit tests of the ingester's batch handling: records with empty JSON values at
 * the given offsets, one commit hook, and whatever else a test overrides. Real batches are the integration suites'.
 */
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';

export interface BatchStub {
  topic: string;
  partition: number;
  offsets: number[];
  /** The last offset fetched (transaction markers after the last record); the last record's by default. */
  lastFetched?: number;
  /** Each commit attempt of the batch (`commitOffsetsIfNecessary`) with the offset it sends. */
  commit?: (offset: string) => Promise<void> | void;
  /** Each `resolveOffset` call. */
  resolve?: (offset: string) => void;
  /** Fields laid over the payload (a consumer's pause/resume, a heartbeat that fails). */
  extra?: object;
}

export function batchPayload(b: BatchStub): EachBatchPayload {
  return {
    commitOffsetsIfNecessary: async (o: { topics: { partitions: { offset: string }[] }[] }) =>
      b.commit?.(o.topics[0]!.partitions[0]!.offset),
    batch: {
      topic: b.topic,
      partition: b.partition,
      messages: b.offsets.map(
        (o) => ({ offset: String(o), value: Buffer.from('{}'), key: null }) as unknown as KafkaMessage,
      ),
      lastOffset: () => String(b.lastFetched ?? b.offsets.at(-1)),
    },
    heartbeat: async () => undefined,
    isRunning: () => true,
    isStale: () => false,
    resolveOffset: (o: string) => b.resolve?.(o),
    ...b.extra,
  } as unknown as EachBatchPayload;
}
