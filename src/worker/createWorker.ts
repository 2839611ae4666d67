/**
 * The worker's parts, built from configuration: Temporal workers running the `dispatch` workflow and its
 * activities, with the clients the activities need (an undici pool for the runs API, one shared DLQ producer).
 */
import fs from 'node:fs';
import {
  DefaultLogger,
  IllegalStateError,
  MetricsBuffer,
  NativeConnection,
  Runtime,
  Worker,
} from '@temporalio/worker';
import { Agent } from 'undici';
import type { RelayConfig } from '../config';
import { createActivities } from '../activities';
import { createBreakerGate } from '../activities/breakerGate';
import { createKafka, holdKafkaAuth } from '../kafka/client';
import { DlqPublisher } from '../kafka/dlqPublisher';
import { SourceRecordReader } from '../kafka/sourceRecord';
import { followTenantPauses } from '../kafka/tenantPauses';
import type { Logger } from '../logger';
import { type Closeable, type RelayService, type RelayServiceDeps, closeOnce } from '../lifecycle';
import { checkTemporalTls, createNativeConnection } from '../temporal/connection';
import { lastCallHistory } from '../temporal/callAttempts';
import { startReader } from '../temporal/history';
import { startTracing } from '../tracing/tracing';
import { VERSION } from '../version';
import { HEARTBEAT_THROTTLE_MS, deadLetterTaskQueue, largeInputTaskQueue } from '../contract/workflow';
import { SdkMetricsBridge } from './sdkMetrics';
import { workflowSource } from './workflowBundle';

/** The share of RUNS_API_MAX_RPS the large-input queue gets (inputs over 32 KiB are few). */
const LARGE_QUEUE_RPS_SHARE = 0.1;

/** Dead letters are rare and short (one Kafka write); a few at once keep up with any burst of budget ends. */
const DEAD_LETTER_SLOTS = 16;

/** Reading a dead-lettered dispatch's source record back is one group join and one fetch: well within this. */
const SOURCE_READ_TIMEOUT_MS = 20_000;

/**
 * Routes the SDK's own logs through ours, at WARN and above, and buffers its metrics for the relay's registry.
 * Must precede any connection; an application that installed the SDK runtime itself keeps its own.
 */
function installSdkRuntime(logger: Logger): MetricsBuffer | undefined {
  const sdkLog = logger.child({ component: 'temporal-sdk' });
  // Drained every second: room for a second's updates at hundreds of dispatches per second, and for a stall.
  const buffer = new MetricsBuffer({ maxBufferSize: 100_000, useSecondsForDurations: true });
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN', (e) =>
        sdkLog[e.level === 'ERROR' ? 'error' : 'warn'](e.meta ?? {}, e.message),
      ),
      // The SDK's worker metrics, moved into the relay's registry (./sdkMetrics.ts).
      telemetryOptions: { metrics: { buffer } },
    });
    return buffer;
  } catch (err) {
    if (!(err instanceof IllegalStateError)) throw err;
    logger.debug('Temporal SDK runtime already installed: its logs and metrics keep their own settings');
    return undefined;
  }
}

export async function createWorker(
  cfg: RelayConfig,
  { logger, metrics }: RelayServiceDeps,
): Promise<RelayService> {
  const sdkMetrics = installSdkRuntime(logger);
  const parts: Closeable[] = [];
  const close = closeOnce(logger, parts);
  if (sdkMetrics) {
    const bridge = new SdkMetricsBridge(sdkMetrics, metrics.registry);
    parts.push({ name: 'SDK metrics', close: async () => bridge.close() });
  }
  try {
    return await assemble(cfg, { logger, metrics }, parts, close);
  } catch (err) {
    await close();
    throw err;
  }
}

async function assemble(
  cfg: RelayConfig,
  { logger, metrics }: RelayServiceDeps,
  parts: Closeable[],
  close: () => Promise<void>,
): Promise<RelayService> {
  // First in, last out: the spans of the last calls are flushed after the workers have stopped.
  const tracing = cfg.tracing ? startTracing(cfg.tracing) : undefined;
  if (tracing) parts.push({ name: 'tracing', close: () => tracing.close() });
  await checkTemporalTls(cfg.temporal);
  const connection: NativeConnection = await createNativeConnection(cfg.temporal, logger);
  parts.push({ name: 'temporal connection', close: () => connection.close() });

  // Keep-alive pool to the runs API; undici's `request` never retries on its own.
  // RUNS_API_CA replaces the system roots for the runs API's certificate.
  const dispatcher = new Agent({
    connections: cfg.worker.httpConnections,
    keepAliveTimeout: 30_000,
    ...(cfg.runsApi.caPath ? { connect: { ca: fs.readFileSync(cfg.runsApi.caPath) } } : {}),
  });
  parts.push({ name: 'runs API pool', close: () => dispatcher.close() });

  // Let go after every Kafka client of this service (reverse order): a token grant then in flight ends.
  const releaseKafkaAuth = holdKafkaAuth(cfg.kafka);
  parts.push({ name: 'Kafka token', close: async () => releaseKafkaAuth() });
  const kafka = createKafka(cfg.kafka, logger);
  const dlq = new DlqPublisher(kafka, metrics, logger.child({ component: 'dlq' }));
  parts.push({ name: 'DLQ producer', close: () => dlq.close() });
  const sources = new SourceRecordReader(kafka, SOURCE_READ_TIMEOUT_MS);
  parts.push({ name: 'source record reader', close: () => sources.close() });
  // Every pause, read before the first task is polled and followed after: a paused tenant's calls are held.
  const pauses = followTenantPauses(kafka, cfg.kafka, {
    logger: logger.child({ component: 'tenant-pauses' }),
    gauge: metrics.tenantPaused,
  });
  parts.push({ name: 'tenant pauses', close: () => pauses.close() });

  const { note, ...found } = workflowSource(tracing !== undefined);
  const traced = tracing?.workerOptions();
  // Every worker's activities get the activity interceptor; the dispatch queue's worker also runs the workflows,
  // with the sink their spans leave by (and, when bundling now, the interceptor modules).
  const activityInterceptors = traced ? { interceptors: { activity: traced.interceptors.activity } } : {};
  const source =
    'workflowModules' in found
      ? {
          workflowsPath: found.workflowsPath,
          interceptors: { ...activityInterceptors.interceptors, workflowModules: found.workflowModules },
        }
      : { ...found, ...activityInterceptors };
  const workflowSinks = traced ? { sinks: traced.sinks } : {};
  if (note === 'stale bundle ignored: bundling now') logger.warn({ workflows: note }, 'workflow code');
  else logger.info({ workflows: note }, 'workflow code');
  const gate = createBreakerGate(
    { ...cfg.worker.breaker, paced: cfg.worker.runsApiMaxRps !== undefined },
    metrics,
    logger.child({ component: 'breaker' }),
  );
  const activities = createActivities({
    gate,
    dispatcher,
    runsApi: { url: cfg.runsApi.url, ...(cfg.runsApi.token ? { token: cfg.runsApi.token } : {}) },
    userAgent: `poimen-relay/${VERSION}`,
    dlq,
    metrics,
    logger: logger.child({ component: 'activities' }),
    startedWith: startReader(connection, cfg.temporal.namespace),
    callHistory: (workflowId, runId, through) =>
      lastCallHistory(
        (req) => connection.workflowService.getWorkflowExecutionHistoryReverse(req),
        cfg.temporal.namespace,
        workflowId,
        runId,
        through,
      ),
    sourceRecord: (at, signal) => sources.read(at, signal),
    tenantPause: (tenant) => pauses.pauseOf(tenant),
  });
  // Made in start(), not here: a Temporal Worker holds the connection from its creation and lets it go only by
  // running and shutting down, so one made but never run would keep close() from releasing anything.
  // RUNS_API_MAX_RPS is enforced by the server across all workers of the queue. Eager activity dispatch hands a
  // call straight back to the worker that scheduled it, past the server's limit, so it is off when a cap is set.
  // The large-input queue calls the same API: it gets a tenth of the cap and the dispatch queue the rest, so
  // the two together stay within it.
  const rps = cfg.worker.runsApiMaxRps;
  const pacedAt = (share: number) =>
    rps === undefined
      ? {}
      : { maxTaskQueueActivitiesPerSecond: rps * share, maxEagerActivityReservationsPerWorkflowTask: 0 };
  // A waiting attempt's heartbeats reach the server often enough to ride out a pause (contract/workflow.ts). The
  // dead-letter queue's activities have no heartbeat timeout and keep the SDK's default.
  const heartbeats = { maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE_MS };
  const makers: (() => Promise<Worker>)[] = [
    () =>
      Worker.create({
        connection,
        namespace: cfg.temporal.namespace,
        taskQueue: cfg.temporal.taskQueue,
        ...source,
        ...workflowSinks,
        activities,
        maxConcurrentActivityTaskExecutions: cfg.worker.maxConcurrentActivities,
        maxConcurrentWorkflowTaskExecutions: cfg.worker.maxConcurrentWorkflowTasks,
        // Set, not derived: the SDK sizes the default from the heap limit, and under the worker's heap cap that
        // default is 10, which evicts most dispatches between their two workflow tasks (docs/performance.md).
        maxCachedWorkflows: cfg.worker.maxCachedWorkflows,
        shutdownGraceTime: cfg.worker.shutdownGraceMs,
        ...heartbeats,
        ...pacedAt(1 - LARGE_QUEUE_RPS_SHARE),
      }),
    // Calls whose input is over LARGE_INPUT_BYTES are scheduled on their own queue (src/workflows/index.ts) and
    // run here, a few at a time: each holds about 8.5 × its input outside the heap, so slots alone, sized for
    // small inputs, would let a burst of large ones exceed the container's memory limit (docs/design.md).
    () =>
      Worker.create({
        connection,
        namespace: cfg.temporal.namespace,
        taskQueue: largeInputTaskQueue(cfg.temporal.taskQueue),
        ...activityInterceptors,
        activities,
        maxConcurrentActivityTaskExecutions: cfg.worker.maxConcurrentLargeActivities,
        shutdownGraceTime: cfg.worker.shutdownGraceMs,
        ...heartbeats,
        ...pacedAt(LARGE_QUEUE_RPS_SHARE),
      }),
    // Dead letters have their own queue (src/workflows/index.ts): neither attempts waiting on the circuit breaker
    // nor RUNS_API_MAX_RPS may hold one back.
    () =>
      Worker.create({
        connection,
        namespace: cfg.temporal.namespace,
        taskQueue: deadLetterTaskQueue(cfg.temporal.taskQueue),
        ...activityInterceptors,
        activities,
        maxConcurrentActivityTaskExecutions: DEAD_LETTER_SLOTS,
        shutdownGraceTime: cfg.worker.shutdownGraceMs,
      }),
  ];
  const workers: Worker[] = [];
  let started = false;
  let pausesRead = false;
  let run: Promise<void> | undefined;
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const done = settled.then(() => run);
  // An application that never awaits `done` must not die of an unhandled rejection; one that does still sees it.
  done.catch(() => undefined);
  parts.push({
    name: 'temporal worker',
    close: async () => {
      // A worker made but not run (start() failed half-way) is run and shut down at once to let go of it.
      const idle = workers.filter((w) => w.getState() === 'INITIALIZED').map((w) => w.run());
      gate.releaseWaiters();
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      settle();
      await Promise.all([run, ...idle]);
    },
  });
  return {
    async start() {
      started = true;
      // No call is taken before every pause is known: a paused tenant's must not go out after a restart.
      await pauses.start();
      if (pauses.stopped) return;
      pausesRead = true;
      for (const make of makers) workers.push(await make());
      run = Promise.all(workers.map((w) => w.run())).then(() => undefined);
      settle();
    },
    done,
    // Unready until the pauses are read; a follow that breaks later (Kafka out) leaves the worker ready, calling
    // with the pauses last read (the follower logs it): its calls do not need Kafka.
    ready: () => pausesRead && workers.length > 0 && workers.every((w) => w.getState() === 'RUNNING'),
    readinessDetail: () => {
      if (!started) return 'not started';
      if (!pausesRead && pauses.notYetRead) return pauses.notYetRead;
      return workers.length === 0
        ? 'starting workers'
        : `workers ${workers.map((w) => w.getState()).join(', ')}`;
    },
    close,
  };
}
