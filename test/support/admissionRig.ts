/**
 * What the admission tests drive (src/ingest/admission.ts): watches closed by hand, a recording stub consumer, a
 * batch of a topic's records, and an ingester whose tenants may keep a fixed number open. The start
 * (`handleRecord`) is each test file's own mock.
 */
import type { EachBatchPayload } from 'kafkajs';
import { loadRelayConfig } from '../../src/config';
import { TenantAdmission } from '../../src/ingest/admission';
import { Ingester } from '../../src/ingest/ingester';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import { batchPayload as batchStub } from './batchPayload';
import { ingesterInternals } from './ingesterInternals';

/** Watches the test closes by hand, by workflow id. */
export function watches() {
  const open = new Map<string, () => void>();
  const watch = (workflowId: string, _runId: string, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      open.set(workflowId, resolve);
      signal.addEventListener('abort', () => reject(new Error('aborted')));
    });
  const close = (workflowId: string) => {
    open.get(workflowId)!();
    open.delete(workflowId);
  };
  return { open, watch, close };
}

export function stubConsumer() {
  const calls: string[] = [];
  return {
    calls,
    commitOffsets: jest.fn(async () => undefined),
    pause: jest.fn((t: { topic: string; partitions?: number[] }[]) =>
      calls.push(`pause ${t[0]!.topic}/${t[0]!.partitions}`),
    ),
    resume: jest.fn((t: { topic: string; partitions?: number[] }[]) =>
      calls.push(`resume ${t[0]!.topic}/${t[0]!.partitions}`),
    ),
  };
}

export function batchPayload(
  topic: string,
  offsets: number[],
  consumer: ReturnType<typeof stubConsumer>,
  partition = 0,
) {
  const resolved: string[] = [];
  const commits: string[] = [];
  const payload = batchStub({
    topic,
    partition,
    offsets,
    commit: async (offset) => {
      commits.push(offset);
      await consumer.commitOffsets();
    },
    resolve: (o) => resolved.push(o),
  });
  return { payload, resolved, commits };
}

export function boundIngester(maxOpen: number, w: ReturnType<typeof watches>) {
  const cfg = loadRelayConfig('ingester', {});
  const metrics = createMetrics({ defaultMetrics: false });
  const admission = new TenantAdmission({
    maxOpen: 0,
    tenantMaxOpen: maxOpen,
    watch: w.watch,
    gauge: metrics.tenantOpenDispatches,
  });
  const ing = new Ingester(
    { ...cfg, ingest: { ...cfg.ingest, maxInFlight: 8, commitEveryRecords: 1 } },
    { admin: () => ({}) } as never,
    {} as never,
    metrics,
    createLogger('test', 'silent'),
    { admission },
  );
  const consumer = stubConsumer();
  ingesterInternals(ing).group.consumer = consumer;
  const each = (b: EachBatchPayload) => ingesterInternals(ing).turns.run(consumer, b);
  return { ing, admission, consumer, each, metrics };
}
