/**
 * The outage phase: a pre-loaded backlog drains through the relay, and when half of it has reached
 * the runs API the API answers 503 to every call for a while, then recovers. What it measures is what an
 * outage costs: calls the API took while down (the breaker's bound), dead letters (none while the retry budget
 * lasts), and how fast the backlog drains once the API is back, against this phase's own healthy rate.
 */
import path from 'node:path';
import type { Admin } from 'kafkajs';
import { loadRelayConfig } from 'poimen-relay/internal/config/index';
import { topics, workflowId } from 'poimen-relay/internal/contract/index';
import { freePort } from '#devstack/ports';
import { type RelayProcess, startRelayProcess } from '#devstack/relayProcess';
import { waitUntil } from 'poimen-relay/internal/poll';
import { RunsApiDouble } from '#devstack/runsApiDouble';
import { retryCost } from './historyCost';
import { round } from './measure';
import { type BenchTarget, newTenant, preload, relayEnv, startWorkers } from './rig';
import { openCostWindow, sampleEvenly } from './temporalCost';

/** Histories of the phase read at most: all of a quick run's, a sample of a full run's. */
const OUTAGE_HISTORIES = 1000;

export interface OutageOptions {
  n: number;
  outageS: number;
  workers: number;
  partitions: number;
  /** POIMEN_BREAKER_PROBE_INTERVAL_MS for the phase's workers, set explicitly so the result says what it was. */
  probeIntervalMs: number;
  /** How long the drain after recovery may take before the phase gives up and reports what it has. */
  drainTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Records the group has committed on a topic, i.e. dispatches the ingester has started. */
async function committedCount(admin: Admin, groupId: string, topic: string): Promise<number> {
  const [mine] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return (mine?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

/** Records on a topic now (a fresh topic: its log starts at 0, so the high watermarks add up to the count). */
async function recordCount(admin: Admin, topic: string): Promise<number> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
}

export async function outage(t: BenchTarget, o: OutageOptions) {
  const api = await RunsApiDouble.start({ record: false });
  const tenant = await newTenant(t, o.partitions);
  const keys = await preload(t, tenant, o.n, 'outage');
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-outage-${tenant}`,
    KAFKA_GROUP_ID: `bench-outage-${tenant}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
    POIMEN_BREAKER_PROBE_INTERVAL_MS: String(o.probeIntervalMs),
  });
  const workers = await startWorkers(t, env, o.workers, 'outage');
  const admin = t.kafka.admin();
  await admin.connect();
  let ingester: RelayProcess | undefined;
  // When the ingester had started every dispatch: from then on the server only executes, as in the drain after
  // recovery, so the healthy rate over that stretch is the like-for-like one.
  let ingestedAtMs: number | undefined;
  let watching = true;
  const watcher = (async () => {
    while (watching && ingestedAtMs === undefined) {
      const done = await committedCount(admin, `bench-outage-${tenant}`, topics.dispatch(tenant)).catch(
        () => 0,
      );
      if (done >= o.n) ingestedAtMs = Date.now();
      else await sleep(500);
    }
  })();
  try {
    const costWindow = await openCostWindow(t);
    ingester = await startRelayProcess({
      role: 'ingest',
      env,
      metricsPort: await freePort(),
      logFile: path.join(t.logsDir, 'bench-outage-ingest.log'),
    });
    const half = Math.ceil(o.n / 2);
    if (!(await waitUntil(() => api.runs.size >= half, 10 * 60_000, 20))) {
      throw new Error(`outage: only ${api.runs.size} of ${half} runs before the outage was due`);
    }
    // The outage's length is the experiment itself, so it is a timer, not a condition.
    const downAtMs = Date.now();
    api.always({ kind: 'status', status: 503 });
    await sleep(o.outageS * 1000);
    const upAtMs = Date.now();
    api.always(undefined);

    // Done when every dispatch has a run or a dead letter (a dead-lettered one never gets its run), or at the
    // timeout; the DLQ is read every 2 s, the runs every 100 ms.
    const deadline = Date.now() + (o.drainTimeoutMs ?? 30 * 60_000);
    for (let i = 1; api.runs.size < o.n && Date.now() < deadline; i++) {
      if (i % 20 === 0 && api.runs.size + (await recordCount(admin, topics.dlq(tenant))) >= o.n) break;
      await sleep(100);
    }
    const deadLetters = await recordCount(admin, topics.dlq(tenant));
    watching = false;
    await watcher;
    // Every history up to a bound: the retried attempts are in the few dispatches the outage caught in flight.
    const cost = await costWindow.close({
      taskQueue: env.TEMPORAL_TASK_QUEUE!,
      sample: sampleEvenly(keys, OUTAGE_HISTORIES).map((k) => workflowId(tenant, k)),
      dispatches: o.n,
    });

    const created = api.requests.filter((r) => r.answer === 201).map((r) => r.receivedAtMs);
    created.sort((a, b) => a - b);
    const before = created.filter((ms) => ms < downAtMs);
    const after = created.filter((ms) => ms >= upAtMs);
    // Steady state: from the first run, so the ingester's start and group join do not lower the healthy rate.
    const healthyPerS = before.length / ((downAtMs - before[0]!) / 1000);
    const drainS = after.length > 0 ? (after[after.length - 1]! - upAtMs) / 1000 : NaN;
    const drainPerS = after.length / drainS;
    const executingS = ingestedAtMs === undefined ? 0 : (downAtMs - ingestedAtMs) / 1000;
    const executingPerS =
      executingS >= 5 ? before.filter((ms) => ms >= ingestedAtMs!).length / executingS : undefined;
    return {
      outage_api_calls_during: api.requests.filter(
        (r) => r.receivedAtMs >= downAtMs && r.receivedAtMs < upAtMs,
      ).length,
      outage_dead_letters: deadLetters,
      outage_drain_s: round(drainS, 2),
      outage_drain_rate_over_healthy: round(drainPerS / healthyPerS, 3),
      outage_detect_s: after.length > 0 ? round((after[0]! - upAtMs) / 1000, 2) : NaN,
      /** When 90 % of the runs still missing at recovery were created: the bulk of the drain without its tail. */
      outage_drain_90_s:
        after.length > 0 ? round((after[Math.ceil(after.length * 0.9) - 1]! - upAtMs) / 1000, 2) : NaN,
      outage_drain_per_s: round(drainPerS),
      outage_healthy_per_s: round(healthyPerS),
      outage_healthy_rate_source:
        'this phase before the outage: runs created from the first run to the outage start',
      /** Seconds before the outage by which the ingester had started every dispatch; null: it had not. */
      outage_ingested_before_outage_s: executingS > 0 ? round(executingS, 2) : null,
      /** The healthy rate once every dispatch was started (at least 5 s of it before the outage), and the drain against it. */
      outage_healthy_executing_per_s: executingPerS === undefined ? null : round(executingPerS),
      outage_drain_rate_over_healthy_executing:
        executingPerS === undefined ? null : round(drainPerS / executingPerS, 3),
      outage_runs_before: before.length,
      outage_runs_after_recovery: after.length,
      outage_runs_created: created.length,
      outage_conflicts_409: api.requests.filter((r) => r.answer === 409).length,
      outage_actual_s: round((upAtMs - downAtMs) / 1000, 2),
      /** What the phase's dispatches cost, and what a retried attempt adds to the happy path (temporalCost.ts). */
      outage_dispatch_cost: cost.figures,
      outage_retry_cost: retryCost(cost.costs),
      settings: {
        n: o.n,
        outage_s: o.outageS,
        workers: o.workers,
        partitions: o.partitions,
        fault: '503 without Retry-After to every call',
        outage_starts_at: `${half} runs created (half of n)`,
        POIMEN_BREAKER_PROBE_INTERVAL_MS: o.probeIntervalMs,
        // As the phase's ingester and workers read them from the env they were given.
        retry: loadRelayConfig('ingester', env).retry,
        breaker: loadRelayConfig('worker', env).worker.breaker,
        runs_api_max_rps: loadRelayConfig('worker', env).worker.runsApiMaxRps ?? 'unset',
      },
    };
  } finally {
    watching = false;
    await watcher;
    await admin.disconnect();
    await ingester?.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await api.close();
  }
}

export type OutageFigures = Awaited<ReturnType<typeof outage>>;
