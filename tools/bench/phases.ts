/**
 * Benchmark phases (their shared set-up is in rig.ts). Each runs real processes against the same Kafka, Temporal
 * and a minimal runs API, and returns measured figures only.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { WORKFLOW_TYPE, topics, workflowId } from 'poimen-relay/internal/contract/index';
import { dispatchStartOptions } from 'poimen-relay/internal/ingest/startDispatch';
import { freePort } from '#devstack/ports';
import { type RelayProcess, startRelayProcess } from '#devstack/relayProcess';
import { RunsApiDouble } from '#devstack/runsApiDouble';
import { waitUntil } from 'poimen-relay/internal/poll';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { DEFAULT_DISPATCH_POLICY, type DispatchInput } from 'poimen-relay/internal/contract/workflow';
import { type RoleFigures, cpuMsPerDispatch, cpuWindow, perSecond } from './cpu';
import { committedAtLogEnd } from './groupOffsets';
import { mapLimit, peakRssMiB, percentile, round } from './measure';
import { HISTORY_SAMPLE, openCostWindow, sampleEvenly } from './temporalCost';
import { type BenchTarget, dispatchValue, drained, newTenant, preload, relayEnv, startWorkers } from './rig';

export type { BenchTarget } from './rig';

/** 1. The bare-Temporal ceiling: the dispatch workflow started directly with the client, no Kafka. */
export async function ceiling(t: BenchTarget, n: number, concurrency: number, workerCount: number) {
  const api = await RunsApiDouble.start({ record: false });
  const taskQueue = `bench-ceiling-${crypto.randomUUID()}`;
  const workers = await startWorkers(
    t,
    relayEnv(t, api, { TEMPORAL_TASK_QUEUE: taskQueue }),
    workerCount,
    'ceiling',
  );
  const connection = await Connection.connect({ address: t.temporalAddress });
  const client = new Client({ connection, namespace: t.namespace });
  const run = crypto.randomBytes(4).toString('hex');
  // Each start's round trip: the L of the ingester's in-flight model (docs/operations.md, partitions per topic).
  const startMs: number[] = [];
  try {
    const t0 = Date.now();
    await mapLimit(
      Array.from({ length: n }, (_, i) => i),
      concurrency,
      async (i) => {
        const key = `ceiling-${run}-${i}`;
        const input: DispatchInput = {
          tenant: 'benchceiling',
          dispatch: {
            workflow_ref: 'bench@v1',
            input_json: JSON.stringify({ sent_at: Date.now() }),
            goal_id: null,
            dispatch_key: key,
          },
          source: {
            topic: 'poimen.benchceiling.dispatch',
            partition: 0,
            offset: String(i),
            timestamp: String(Date.now()),
          },
          policy: DEFAULT_DISPATCH_POLICY,
        };
        // Exactly what the ingester starts: same id, policies, search attributes and memo.
        const s0 = performance.now();
        await client.workflow.start(WORKFLOW_TYPE, dispatchStartOptions(taskQueue, input));
        startMs.push(performance.now() - s0);
      },
    );
    const t1 = await drained(api, n, 20 * 60_000);
    startMs.sort((a, b) => a - b);
    return {
      per_s: round(n / ((t1 - t0) / 1000)),
      n,
      concurrency,
      workers: workerCount,
      start_ms: {
        p50: round(percentile(startMs, 50)),
        p95: round(percentile(startMs, 95)),
        p99: round(percentile(startMs, 99)),
      },
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await connection.close();
    await api.close();
  }
}

/**
 * 2 (+5, 6). The relay draining a pre-loaded backlog: rate, POST amplification, peak RSS of both processes, and
 * the CPU each process spent per dispatch.
 */
export async function relayDrain(
  t: BenchTarget,
  n: number,
  opts: {
    workers: number;
    partitions: number;
    env?: Record<string, string>;
    /** Seconds to watch every process after the drain, with nothing left to do: their idle CPU. 0: not measured. */
    idleTailS?: number;
    /** Count what the dispatches cost Temporal (and PostgreSQL) once they have closed (temporalCost.ts). */
    cost?: boolean;
  },
) {
  const api = await RunsApiDouble.start({ record: false });
  const tenant = await newTenant(t, opts.partitions);
  const keys = await preload(t, tenant, n, 'relay');
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-relay-${tenant}`,
    KAFKA_GROUP_ID: `bench-relay-${tenant}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
    ...opts.env,
  });
  const workers = await startWorkers(t, env, opts.workers, `relay-${opts.workers}`);
  let ingester: RelayProcess | undefined;
  try {
    const costWindow = opts.cost ? await openCostWindow(t) : undefined;
    const t0 = Date.now();
    ingester = await startRelayProcess({
      role: 'ingest',
      env,
      metricsPort: await freePort(),
      logFile: path.join(t.logsDir, `bench-relay-ingest.log`),
    });
    // The CPU window opens once the ingester is ready (its start-up is a one-off, not a cost per dispatch) and
    // closes when the last run arrived; it counts the dispatches the API received in between.
    const pids = {
      ingester: [ingester.child.pid!],
      worker: workers.map((w) => w.child.pid!),
      ...(t.serverPids?.() ?? { temporal: [], postgres: [], kafka: [] }),
    };
    const cpu = cpuWindow(pids);
    const runsBefore = api.runs.size;
    const cpuFrom = Date.now();
    const t1 = await drained(api, n, 30 * 60_000);
    const cpuMs = cpu.end();
    const cpuWindowS = round((Date.now() - cpuFrom) / 1000);
    const cpuDispatches = api.runs.size - runsBefore;
    // Measured after the rate's end mark, so the check costs the figure nothing.
    const atLogEnd = await committedAtLogEnd(t.kafka, `bench-relay-${tenant}`, [topics.dispatch(tenant)]);
    let idleCpuMsPerS: RoleFigures | undefined;
    if (opts.idleTailS) {
      const idle = cpuWindow(pids);
      await new Promise((r) => setTimeout(r, opts.idleTailS! * 1000));
      idleCpuMsPerS = perSecond(idle.end(), opts.idleTailS);
    }
    const sample = sampleEvenly(keys, HISTORY_SAMPLE).map((k) => workflowId(tenant, k));
    const cost = await costWindow?.close({ taskQueue: env.TEMPORAL_TASK_QUEUE!, sample, dispatches: n });
    return {
      per_s: round(n / ((t1 - t0) / 1000)),
      n,
      committed_at_log_end: atLogEnd,
      amplification: round(api.requests.length / n, 3),
      ingester_rss_mib: peakRssMiB(ingester.child.pid),
      worker_rss_mib: Math.max(...workers.map((w) => peakRssMiB(w.child.pid) ?? 0)),
      cpu_dispatches: cpuDispatches,
      // The window's length, so a reader can tell the servers' idle cost from the per-dispatch one.
      cpu_window_s: cpuWindowS,
      cpu_ms: cpuMs,
      cpu_ms_per_dispatch: cpuMsPerDispatch([{ cpu_ms: cpuMs, dispatches: cpuDispatches }]),
      ...(idleCpuMsPerS ? { idle_cpu_ms_per_s: idleCpuMsPerS, idle_window_s: opts.idleTailS } : {}),
      ...(cost ? { dispatch_cost: cost.figures } : {}),
    };
  } finally {
    await ingester?.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await api.close();
  }
}

/** 3. The plain consumer a user would write instead (no Temporal): its drain rate. */
export async function baseline(t: BenchTarget, n: number, partitions: number) {
  const api = await RunsApiDouble.start({ record: false });
  const tenant = await newTenant(t, partitions);
  await preload(t, tenant, n, 'baseline');
  const env = relayEnv(t, api, {
    KAFKA_GROUP_ID: `bench-baseline-${tenant}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
  });
  const t0 = Date.now();
  // The compiled consumer, whether the phase runs from dist-tools (npm run bench) or from source under jest.
  const consumer = path.join(PACKAGE_ROOT, 'dist-tools', 'tools', 'bench', 'baselineConsumer.js');
  const child: ChildProcess = spawn(process.execPath, [consumer], {
    env,
    stdio: ['ignore', fs.openSync(path.join(t.logsDir, 'bench-baseline.log'), 'a'), 'inherit'],
  });
  try {
    const t1 = await drained(api, n, 10 * 60_000);
    return { per_s: round(n / ((t1 - t0) / 1000)), n, rss_mib: peakRssMiB(child.pid) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await api.close();
  }
}

/** 4. Record timestamp → API receipt at a fixed offered load. */
export async function latency(t: BenchTarget, ratePerSec: number, durationS: number, workerCount: number) {
  const api = await RunsApiDouble.start({ record: true });
  const tenant = await newTenant(t, 4);
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-latency-${tenant}`,
    KAFKA_GROUP_ID: `bench-latency-${tenant}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
  });
  const workers = await startWorkers(t, env, workerCount, 'latency');
  const ingester = await startRelayProcess({
    role: 'ingest',
    env,
    metricsPort: await freePort(),
    logFile: path.join(t.logsDir, 'bench-latency-ingest.log'),
  });
  const producer = t.kafka.producer();
  await producer.connect();
  try {
    const n = Math.round(ratePerSec * durationS);
    const start = Date.now();
    // Paced in 50 ms ticks: each tick sends what the schedule says is due.
    let sent = 0;
    while (sent < n) {
      const due = Math.min(n, Math.floor(((Date.now() - start) / 1000) * ratePerSec));
      if (due > sent) {
        const batch = Array.from({ length: due - sent }, (_, i) => `lat-${sent + i}`);
        sent = due;
        await producer.send({
          topic: topics.dispatch(tenant),
          acks: 1,
          messages: batch.map((k) => ({ value: dispatchValue(k) })),
        });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    await drained(api, n, 10 * 60_000);
    const lat = api.requests
      .filter((r) => r.answer === 201)
      .map((r) => r.receivedAtMs - Number((r.json as { input: { sent_at: number } }).input.sent_at))
      .sort((a, b) => a - b);
    return {
      offered_per_s: ratePerSec,
      n,
      p50_ms: percentile(lat, 50),
      p95_ms: percentile(lat, 95),
      p99_ms: percentile(lat, 99),
    };
  } finally {
    await producer.disconnect();
    await ingester.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await api.close();
  }
}

/** 6. Ingester memory with a large backlog: peak RSS while it works through it for a bounded window. */
export async function ingesterMemory(t: BenchTarget, backlog: number, windowS: number) {
  const api = await RunsApiDouble.start({ record: false });
  const tenant = await newTenant(t, 4);
  await preload(t, tenant, backlog, 'mem');
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-mem-${tenant}`,
    KAFKA_GROUP_ID: `bench-mem-${tenant}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
  });
  const workers = await startWorkers(t, env, 1, 'mem');
  const ingester = await startRelayProcess({
    role: 'ingest',
    env,
    metricsPort: await freePort(),
    logFile: path.join(t.logsDir, 'bench-mem-ingest.log'),
  });
  try {
    await waitUntil(() => api.runs.size >= backlog, windowS * 1000, 200);
    return {
      backlog,
      window_s: windowS,
      relayed_in_window: api.runs.size,
      ingester_rss_mib: peakRssMiB(ingester.child.pid),
      worker_rss_mib: peakRssMiB(workers[0]!.child.pid),
    };
  } finally {
    await ingester.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await api.close();
  }
}
