/**
 * The ingester's private parts its unit tests drive directly (a stub consumer in place of kafkajs's): its group
 * membership (src/ingest/membership.ts), its batch turns (src/ingest/batchTurn.ts) and its consumer's lifecycle
 * (src/ingest/ingester.ts).
 */
import type { EachBatchPayload } from 'kafkajs';
import type { Ingester } from '../../src/ingest/ingester';
import type { PausedPartitions } from '../../src/ingest/pausedPartitions';

export interface IngesterInternals {
  group: { consumer: unknown; joined: boolean };
  turns: { run(c: unknown, p: EachBatchPayload): Promise<void> };
  paused: PausedPartitions;
  startConsumer(topics: string[]): Promise<void>;
  stopConsumer(): Promise<void>;
  onGroupJoin(c: unknown, assignment: Record<string, number[]>): void;
}

export function ingesterInternals(ing: Ingester): IngesterInternals {
  return ing as unknown as IngesterInternals;
}
