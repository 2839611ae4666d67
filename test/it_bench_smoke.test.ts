/**
 * A few hundred dispatches through each benchmark phase, as a correctness check of the benchmark itself
 * (every dispatch reaches the API exactly once; figures are produced). No timing assertions: speed lives in
 * `npm run bench`. The outage phase runs with a short outage so the file stays around a minute.
 */
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { loadStackConfig } from '../devstack/config';
import { stackServerPids } from '../devstack/stack/profiles';
import { outage } from '../tools/bench/outage';
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
  // The servers' pids are known only when the run started the project's own stack.
  ...(s.mode === 'local' ? { serverPids: () => stackServerPids(loadStackConfig(), 'dev') } : {}),
};

test('bench smoke: ceiling, relay and baseline phases each deliver every dispatch exactly once', async () => {
  const c = await ceiling(target, 200, 32, 1);
  expect(c.per_s).toBeGreaterThan(0);
  const r = await relayDrain(target, 300, { workers: 1, partitions: 2, idleTailS: 1 });
  expect(r.amplification).toBe(1);
  expect(r.committed_at_log_end).toBe(true);
  expect(r.per_s).toBeGreaterThan(0);
  expect(r.ingester_rss_mib).toBeGreaterThan(0);
  expect(r.worker_rss_mib).toBeGreaterThan(0);
  // CPU per dispatch of each process over the drain: the relay's own always, the servers' on the local stack;
  // the dev profile has no PostgreSQL.
  expect(r.cpu_dispatches).toBeGreaterThan(0);
  expect(r.cpu_ms_per_dispatch.ingester).toBeGreaterThan(0);
  expect(r.cpu_ms_per_dispatch.worker).toBeGreaterThan(0);
  if (s.mode === 'local') {
    expect(r.cpu_ms_per_dispatch.temporal).toBeGreaterThan(0);
    expect(r.cpu_ms_per_dispatch.kafka).toBeGreaterThan(0);
  }
  expect(r.cpu_ms_per_dispatch.postgres).toBeNull();
  // The same processes watched for a while after the drain: their idle rate, what the capacity model subtracts.
  expect(r.idle_window_s).toBe(1);
  expect(r.idle_cpu_ms_per_s?.ingester).toBeGreaterThanOrEqual(0);
  expect(r.idle_cpu_ms_per_s?.worker).toBeGreaterThanOrEqual(0);
  expect(r.idle_cpu_ms_per_s?.postgres).toBeNull();
  const b = await baseline(target, 300, 2);
  expect(b.per_s).toBeGreaterThan(0);
  // Three phases and their idle windows in one test: more than the default 180 s on a loaded machine.
}, 300_000);

test('bench smoke: the outage phase takes the API down mid-drain and reports the outage figures, no dead letters', async () => {
  const n = 200;
  const o = await outage(target, {
    n,
    outageS: 8,
    workers: 1,
    partitions: 2,
    probeIntervalMs: 2_000,
    drainTimeoutMs: 120_000,
  });
  for (const key of [
    'outage_api_calls_during',
    'outage_dead_letters',
    'outage_drain_s',
    'outage_drain_rate_over_healthy',
    'outage_detect_s',
  ] as const) {
    expect(Number.isFinite(o[key])).toBe(true);
  }
  expect(o.outage_dead_letters).toBe(0);
  // Every dispatch reached the API exactly once: one 201 each.
  expect(o.outage_runs_created).toBe(n);
  // The outage fell in the middle: runs were created before it, the relay called the API while it was down,
  // and runs were left to drain after recovery.
  expect(o.outage_runs_before).toBeGreaterThan(0);
  expect(o.outage_api_calls_during).toBeGreaterThan(0);
  expect(o.outage_runs_after_recovery).toBeGreaterThan(0);
  expect(o.outage_detect_s).toBeLessThanOrEqual(o.outage_drain_s);
  expect(o.outage_drain_rate_over_healthy).toBeGreaterThan(0);
});
