/**
 * The ingester's dispatch consumer starts only once every tenant pause is read (src/ingest/createIngester.ts), and
 * the process is unready meanwhile: a restarted ingester must not start a paused tenant's record. Everything but
 * createIngester's own sequence is a stand-in (it_tenant_pause runs the real parts, but its ingesters are ready,
 * so past this point, before it publishes).
 */
jest.mock('../../src/temporal/connection', () => ({
  checkTemporalTls: async () => undefined,
  createClientConnection: () => ({ close: async () => undefined }),
}));
jest.mock('../../src/temporal/searchAttributes', () => ({ requireSearchAttributes: async () => undefined }));
jest.mock('@temporalio/client', () => ({ Client: class {} }));
jest.mock('../../src/kafka/client', () => ({
  createKafka: () => ({}),
  holdKafkaAuth: () => () => undefined,
}));
jest.mock('../../src/kafka/dlqPublisher', () => ({
  DlqPublisher: class {
    close = async () => undefined;
  },
}));
jest.mock('../../src/temporal/visibilityCloses', () => ({
  VisibilityCloses: class {
    close() {}
  },
}));

const order: string[] = [];
let finishRead!: () => void;
jest.mock('../../src/kafka/tenantPauseFollower', () => ({
  TenantPauseFollower: class {
    stopped = false;
    notYetRead: string | undefined = 'reading tenant pauses';
    async start() {
      order.push('pauses.start');
      await new Promise<void>((r) => (finishRead = r));
      this.notYetRead = undefined;
      order.push('pauses read');
    }
    pauseOf() {
      return undefined;
    }
    async close() {
      this.stopped = true;
    }
  },
}));
jest.mock('../../src/ingest/ingester', () => ({
  Ingester: class {
    async start() {
      order.push('ingester.start');
    }
    ready() {
      return true;
    }
    readinessDetail() {
      return 'ok';
    }
    async close() {}
  },
}));

import { createIngester } from '../../src/ingest/createIngester';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import type { RelayConfig } from '../../src/config';

test('no record is consumed before the pauses are read; unready until then', async () => {
  const cfg = {
    temporal: { namespace: 'default', taskQueue: 'q' },
    kafka: {},
    ingest: { maxOpen: 0, tenantMaxOpen: 0 },
    retry: { initialIntervalMs: 1, backoff: 2, maxIntervalMs: 1, maxAttempts: 1, maxDurationMs: 1 },
    runsApi: { timeoutMs: 1 },
  } as unknown as RelayConfig;
  const svc = await createIngester(cfg, {
    logger: createLogger('t', 'silent'),
    metrics: createMetrics({ defaultMetrics: false }),
  });
  const started = svc.start();
  await new Promise((r) => setTimeout(r, 20));
  expect(order).toEqual(['pauses.start']);
  expect(svc.ready()).toBe(false);
  expect(svc.readinessDetail()).toBe('reading tenant pauses');
  finishRead();
  await started;
  expect(order).toEqual(['pauses.start', 'pauses read', 'ingester.start']);
  expect(svc.ready()).toBe(true);
  await svc.close();
});
