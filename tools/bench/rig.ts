/**
 * What every benchmark phase stands on: a fresh tenant with its topics, a pre-loaded backlog, relay workers
 * pointed at a runs API double, and the moment the API saw the last of n runs.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import type { Kafka } from 'kafkajs';
import { childEnv } from '#devstack/config';
import { topics } from 'poimen-relay/internal/contract/index';
import { freePort } from '#devstack/ports';
import { type RelayProcess, startRelayProcess } from '#devstack/relayProcess';
import { waitUntil } from 'poimen-relay/internal/poll';
import { ensureTopics, tenantTopicSpecs } from 'poimen-relay/internal/kafka/topics';
import type { RunsApiDouble } from '#devstack/runsApiDouble';
import type { ServerPids } from './cpu';
import type { PgCounters } from './pgCost';

export interface BenchTarget {
  kafkaBrokers: string;
  temporalAddress: string;
  namespace: string;
  logsDir: string;
  kafka: Kafka;
  /**
   * The stack's server processes, read when a CPU window opens (devServerPids on the dev profile; the lead's
   * stackServerPids(cfg, profile) fits). Without it only the relay's own processes are measured.
   */
  serverPids?: () => ServerPids;
  /** Replicas of the phases' tenant topics: 1 on the dev profile's single broker, 3 on the cluster. */
  topicReplicas?: number;
  /** The Temporal server's Prometheus endpoint: its `action` counter (temporalCost.ts). */
  metricsUrl?: string;
  /** PostgreSQL's counters of Temporal's databases now; only the cluster profile has them (pgCost.ts). */
  pgCounters?: () => PgCounters;
}

export const dispatchValue = (key: string, sentAtMs = Date.now()) =>
  JSON.stringify({
    workflow_ref: 'bench@v1',
    input: { sent_at: sentAtMs },
    goal_id: null,
    dispatch_key: key,
  });

/** What the bench sets on every relay process beside the endpoints; the result's settings are read with it. */
export const BENCH_RELAY_SETTINGS = { LOG_LEVEL: 'warn', POIMEN_TOPIC_REFRESH_MS: '2000' };

export function relayEnv(
  t: BenchTarget,
  api: RunsApiDouble,
  extra: Record<string, string>,
): NodeJS.ProcessEnv {
  return childEnv({
    KAFKA_BROKERS: t.kafkaBrokers,
    TEMPORAL_ADDRESS: t.temporalAddress,
    TEMPORAL_NAMESPACE: t.namespace,
    RUNS_API_URL: api.url,
    ...BENCH_RELAY_SETTINGS,
    ...extra,
  });
}

export async function startWorkers(
  t: BenchTarget,
  env: NodeJS.ProcessEnv,
  count: number,
  label: string,
): Promise<RelayProcess[]> {
  const workers: RelayProcess[] = [];
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    workers.push(
      await startRelayProcess({
        role: 'worker',
        env,
        metricsPort: port,
        logFile: path.join(t.logsDir, `bench-${label}-worker-${i}.log`),
      }),
    );
  }
  return workers;
}

/**
 * The tenant's topics as production runs them (docs/operations.md): with three replicas or more, writes need two
 * in sync, so the cluster's figures include what acks=-1 costs there. Added only where the specs lack it, so this
 * stays right once tenantTopicSpecs sets it itself.
 */
export function benchTopicSpecs(tenant: string, partitions: number, replicationFactor: number) {
  const specs = tenantTopicSpecs(tenant, { partitions, replicationFactor });
  if (replicationFactor < 3) return specs;
  return specs.map((spec) =>
    spec.configEntries?.some((e) => e.name === 'min.insync.replicas')
      ? spec
      : {
          ...spec,
          configEntries: [...(spec.configEntries ?? []), { name: 'min.insync.replicas', value: '2' }],
        },
  );
}

export async function newTenant(t: BenchTarget, partitions: number): Promise<string> {
  const tenant = `bench${crypto.randomBytes(5).toString('hex')}`;
  const admin = t.kafka.admin();
  await admin.connect();
  await ensureTopics(admin, benchTopicSpecs(tenant, partitions, t.topicReplicas ?? 1));
  await admin.disconnect();
  return tenant;
}

export async function preload(t: BenchTarget, tenant: string, n: number, prefix: string): Promise<string[]> {
  const producer = t.kafka.producer();
  await producer.connect();
  const keys = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  for (let i = 0; i < n; i += 1000) {
    await producer.send({
      topic: topics.dispatch(tenant),
      acks: -1,
      messages: keys.slice(i, i + 1000).map((k) => ({ key: `${tenant}:${k}`, value: dispatchValue(k) })),
    });
  }
  await producer.disconnect();
  return keys;
}

export async function drained(api: RunsApiDouble, n: number, timeoutMs: number): Promise<number> {
  if (!(await waitUntil(() => api.runs.size >= n, timeoutMs, 50))) {
    throw new Error(`only ${api.runs.size} of ${n} runs after ${timeoutMs} ms`);
  }
  return Math.max(...api.requests.map((r) => r.receivedAtMs));
}
