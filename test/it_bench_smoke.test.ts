/**
 * A few hundred dispatches through each benchmark phase, as a correctness check of the benchmark itself
 * (every dispatch reaches the API exactly once; figures are produced). No timing assertions: speed lives in
 * `npm run bench`.
 */
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { type BenchTarget, baseline, ceiling, relayDrain } from '../tools/bench/phases';
import { REPO_ROOT } from './support/cli';
import { testServices } from './support/testEnv';

const s = testServices();
const target: BenchTarget = {
  kafkaBrokers: s.kafkaBrokers.join(','),
  temporalAddress: s.temporalAddress,
  namespace: s.namespace,
  logsDir: path.join(REPO_ROOT, 'test-artifacts', 'logs'),
  kafka: new Kafka({ clientId: 'it-bench-smoke', brokers: s.kafkaBrokers, logLevel: logLevel.NOTHING }),
};

test('bench smoke: ceiling, relay and baseline phases each deliver every dispatch exactly once', async () => {
  const c = await ceiling(target, 200, 32, 1);
  expect(c.per_s).toBeGreaterThan(0);
  const r = await relayDrain(target, 300, { workers: 1, partitions: 2 });
  expect(r.amplification).toBe(1);
  expect(r.committed_at_log_end).toBe(true);
  expect(r.per_s).toBeGreaterThan(0);
  expect(r.ingester_rss_mib).toBeGreaterThan(0);
  expect(r.worker_rss_mib).toBeGreaterThan(0);
  const b = await baseline(target, 300, 2);
  expect(b.per_s).toBeGreaterThan(0);
});
