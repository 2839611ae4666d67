/**
 * The ingester's private parts its unit tests drive directly (a stub consumer in place of kafkajs's): its group
 * membership (src/ingest/membership.ts), its batch turns (src/ingest/batchTurn.ts) and its consumer's lifecycle
 * (src/ingest/ingester.ts).
 */
import type { EachBatchPayload } from 'kafkajs';
import { loadRelayConfig } from '../../src/config';
import { TenantAdmission } from '../../src/ingest/admission';
import { Ingester } from '../../src/ingest/ingester';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import type { PausedPartitions } from '../../src/ingest/pausedPartitions';

export interface IngesterInternals {
  group: { consumer: unknown; joined: boolean };
  turns: {
    run(c: unknown, p: EachBatchPayload): Promise<void>;
    settled(): Promise<void>;
    /** The fetched bytes kept batches hold now (src/ingest/keptBatches.ts). */
    kept: { keptBytes: number };
  };
  paused: PausedPartitions;
  startConsumer(topics: string[]): Promise<void>;
  stopConsumer(): Promise<void>;
  onGroupJoin(c: unknown, assignment: Record<string, number[]>): void;
}

export function ingesterInternals(ing: Ingester): IngesterInternals {
  return ing as unknown as IngesterInternals;
}

/** Admission with a fixed bound per tenant whose executions never close: no close ever frees a slot. */
export function neverClosing(tenantMaxOpen: number): TenantAdmission {
  return new TenantAdmission({ maxOpen: 0, tenantMaxOpen, watch: () => new Promise<void>(() => undefined) });
}

/** An ingester with `admission` and the config's ingest settings but `overrides`; nothing behind its Kafka. */
export function ingesterWithAdmission(
  admission: TenantAdmission,
  overrides: Partial<Record<string, number>>,
  cfg: ReturnType<typeof loadRelayConfig> = loadRelayConfig('ingester', {}),
): Ingester {
  return new Ingester(
    { ...cfg, ingest: { ...cfg.ingest, ...overrides } },
    { admin: () => ({}) } as never,
    {} as never,
    createMetrics({ defaultMetrics: false }),
    createLogger('test', 'silent'),
    { admission },
  );
}
