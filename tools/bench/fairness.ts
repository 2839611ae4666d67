/**
 * One round of the fairness phase (issue 14 item 1): tenant B publishes a steady trickle, first alone, then while
 * tenant A publishes a large backlog at once. B's record→API latency in both windows of the same round says
 * whether A's flood makes B wait behind it; the history of each of B's executions says where the wait is. The
 * rounds, and what each changes, are in ./fairnessPhase.ts.
 */
import path from 'node:path';
import type { Producer } from 'kafkajs';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common/lib/time';
import { topics, workflowId } from '../../src/contract';
import { freePort } from '../../devstack/ports';
import { startRelayProcess } from '../../devstack/relayProcess';
import { waitUntil } from '../../src/poll';
import { RunsApiDouble } from '../../devstack/runsApiDouble';
import { cpuWindow, perSecond } from './cpu';
import { mapLimit, percentile, round } from './measure';
import { type BenchTarget, dispatchValue, newTenant, relayEnv, startWorkers } from './rig';

export interface FairnessOptions {
  floodN: number;
  steadyPerS: number;
  aloneS: number;
  floodedS: number;
  /** How long B's last records may still take after the flooded window before the rest count as unserved. */
  settleS: number;
  partitions: number;
  /** POIMEN_INGEST_TENANT_MAX_OPEN in the round with admission per tenant (the headline figures). */
  tenantMaxOpen: number;
  /** Further bounds, one round each: the trade between B's latency and A's throughput. */
  tenantMaxOpenSweep: number[];
  /**
   * POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION in the rounds with admission (but the one that measures the
   * default): a little above the bench's ~100-byte dispatches, as operations.md tells an operator to set it.
   */
  fetchMaxBytesPerPartition: number;
}

/** B's unmeasured trickle before its alone window. */
const WARMUP_S = 5;

interface Sent {
  key: string;
  sentAtMs: number;
}

/** B's records, paced in 50 ms ticks, until `untilMs`. */
async function trickle(
  producer: Producer,
  tenant: string,
  perS: number,
  prefix: string,
  untilMs: number,
): Promise<Sent[]> {
  const sent: Sent[] = [];
  const start = Date.now();
  while (Date.now() < untilMs) {
    const due = Math.floor(((Date.now() - start) / 1000) * perS);
    if (due > sent.length) {
      const batch = Array.from({ length: due - sent.length }, (_, i) => ({
        key: `${prefix}-${sent.length + i}`,
        sentAtMs: Date.now(),
      }));
      sent.push(...batch);
      await producer.send({
        topic: topics.dispatch(tenant),
        acks: 1,
        messages: batch.map((s) => ({ value: dispatchValue(s.key, s.sentAtMs) })),
      });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return sent;
}

/** p50/p99 of the records' latencies; a record never served counts with what it has waited so far (a lower bound). */
function latencies(api: RunsApiDouble, sent: Sent[], nowMs: number) {
  const received = new Map<string, number>();
  for (const r of api.requests) {
    if (r.answer !== 201) continue;
    const key = (r.json as { dispatch_key: string }).dispatch_key;
    if (!received.has(key)) received.set(key, r.receivedAtMs);
  }
  const unserved = sent.filter((s) => !received.has(s.key)).length;
  const ms = sent.map((s) => (received.get(s.key) ?? nowMs) - s.sentAtMs).sort((a, b) => a - b);
  return { n: sent.length, unserved, p50_ms: percentile(ms, 50), p99_ms: percentile(ms, 99) };
}

interface Stages {
  /** First workflow task: scheduled → picked up by a worker (the queue, and the worker's slots). */
  workflow_task_wait_ms: number;
  /** The call's activity task: scheduled → picked up. */
  activity_task_wait_ms: number;
  /** The activity's attempt: picked up → completed (the HTTP call and the worker's own work). */
  call_ms: number;
  /** Activity completed → execution completed (the last workflow task, sticky). */
  after_call_ms: number;
}

function stages(history: temporal.api.history.v1.IHistory): Stages | undefined {
  const at = (type: string, nth = 0) => {
    const e = (history.events ?? []).filter(
      (ev) => ev.eventType === temporal.api.enums.v1.EventType[type as 'EVENT_TYPE_UNSPECIFIED'],
    )[nth];
    return e?.eventTime ? tsToMs(e.eventTime) : undefined;
  };
  const wfScheduled = at('EVENT_TYPE_WORKFLOW_TASK_SCHEDULED');
  const wfStarted = at('EVENT_TYPE_WORKFLOW_TASK_STARTED');
  const actScheduled = at('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
  const actStarted = at('EVENT_TYPE_ACTIVITY_TASK_STARTED');
  const actCompleted = at('EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
  const closed = at('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
  if (
    wfScheduled === undefined ||
    wfStarted === undefined ||
    actScheduled === undefined ||
    actStarted === undefined ||
    actCompleted === undefined ||
    closed === undefined
  ) {
    return undefined;
  }
  const [a, b, c, d, e, f] = [wfScheduled, wfStarted, actScheduled, actStarted, actCompleted, closed];
  return { workflow_task_wait_ms: b - a, activity_task_wait_ms: d - c, call_ms: e - d, after_call_ms: f - e };
}

/**
 * Record → workflow start (the ingester's share of the latency; the rest is Temporal's queues and the worker), from
 * each execution's start time. A record not started yet counts with what it has waited so far.
 */
async function startedAfter(t: BenchTarget, tenant: string, sent: Sent[]) {
  const connection = await Connection.connect({ address: t.temporalAddress });
  const client = new Client({ connection, namespace: t.namespace });
  const ms: number[] = [];
  const parts: Record<keyof Stages, number[]> = {
    workflow_task_wait_ms: [],
    activity_task_wait_ms: [],
    call_ms: [],
    after_call_ms: [],
  };
  let notStarted = 0;
  let describeErrors = 0;
  const now = Date.now();
  try {
    await mapLimit(sent, 8, async (s) => {
      try {
        const handle = client.workflow.getHandle(workflowId(tenant, s.key));
        const d = await handle.describe();
        ms.push(d.startTime.getTime() - s.sentAtMs);
        const st = stages(await handle.fetchHistory());
        if (st) for (const k of Object.keys(parts) as (keyof Stages)[]) parts[k].push(st[k]);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) {
          notStarted++;
          ms.push(now - s.sentAtMs);
        } else {
          describeErrors++;
        }
      }
    });
  } finally {
    await connection.close();
  }
  ms.sort((a, b) => a - b);
  const p50 = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  return {
    to_start_p50_ms: percentile(ms, 50),
    to_start_p99_ms: percentile(ms, 99),
    // Where the rest goes, medians from each execution's history (Temporal's event times).
    after_start_p50: Object.fromEntries(Object.entries(parts).map(([k, xs]) => [k, p50(xs)])),
    not_started: notStarted,
    describe_errors: describeErrors,
  };
}

export async function fairnessRound(
  t: BenchTarget,
  o: FairnessOptions,
  label: string,
  maxOpen: number,
  extraEnv: Record<string, string> = {},
) {
  const api = await RunsApiDouble.start({ record: true });
  const a = await newTenant(t, o.partitions);
  const b = await newTenant(t, o.partitions);
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-fair-${a}`,
    KAFKA_GROUP_ID: `bench-fair-${a}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.(${a}|${b})\\.dispatch$`,
    POIMEN_INGEST_TENANT_MAX_OPEN: String(maxOpen),
    ...extraEnv,
  });
  const workers = await startWorkers(t, env, 1, `fairness-${label}`);
  const ingester = await startRelayProcess({
    role: 'ingest',
    env,
    metricsPort: await freePort(),
    logFile: path.join(t.logsDir, `bench-fairness-${label}-ingest.log`),
  });
  // B's producer is its own, so its sends never queue behind A's 1000-record sends.
  const producer = t.kafka.producer();
  const floodProducer = t.kafka.producer();
  await producer.connect();
  await floodProducer.connect();
  const runsOf = (tenant: string) =>
    api.requests.filter((r) => r.answer === 201 && r.headers['x-tenant-id'] === tenant).length;
  const pids = {
    ingester: [ingester.child.pid!],
    worker: workers.map((w) => w.child.pid!),
    ...(t.serverPids?.() ?? { temporal: [], postgres: [], kafka: [] }),
  };
  try {
    // CPU ms per second of each process over each window: whether the flood saturates the machine, and where.
    let cpu = cpuWindow(pids);
    // A warm-up first, not measured: a fresh worker's and server's first executions took 200-300 ms, and three
    // such records are the p99 of a 300-record window (B alone's p99 was its warm-up, flattering the ratio).
    await trickle(producer, b, o.steadyPerS, 'warmup', Date.now() + WARMUP_S * 1000);
    const alone = await trickle(producer, b, o.steadyPerS, 'alone', Date.now() + o.aloneS * 1000);
    const aloneCpu = perSecond(cpu.end(), o.aloneS);
    cpu = cpuWindow(pids);
    // The flood goes out at once beside the trickle: A's records in 1000-record sends, as fast as Kafka takes them.
    const floodStart = Date.now();
    const flood = (async () => {
      for (let i = 0; i < o.floodN; i += 1000) {
        const keys = Array.from({ length: Math.min(1000, o.floodN - i) }, (_, j) => `flood-${i + j}`);
        await floodProducer.send({
          topic: topics.dispatch(a),
          acks: 1,
          messages: keys.map((k) => ({ value: dispatchValue(k) })),
        });
      }
      return Date.now() - floodStart;
    })();
    const flooded = await trickle(producer, b, o.steadyPerS, 'flooded', floodStart + o.floodedS * 1000);
    const floodedCpu = perSecond(cpu.end(), o.floodedS);
    const floodPublishMs = await flood;
    const aRunsInWindow = runsOf(a);
    const bKeys = new Set([...alone, ...flooded].map((s) => s.key));
    await waitUntil(
      () =>
        api.requests.filter(
          (r) => r.answer === 201 && bKeys.has((r.json as { dispatch_key: string }).dispatch_key),
        ).length >= bKeys.size,
      o.settleS * 1000,
      200,
    );
    const now = Date.now();
    return {
      alone: {
        ...latencies(api, alone, now),
        ...(await startedAfter(t, b, alone)),
        cpu_ms_per_s: aloneCpu,
      },
      flooded: {
        ...latencies(api, flooded, now),
        ...(await startedAfter(t, b, flooded)),
        cpu_ms_per_s: floodedCpu,
      },
      flood_n: o.floodN,
      flood_publish_s: round(floodPublishMs / 1000),
      // How much of A's flood the relay had served when B's flooded window closed: A was still queued throughout.
      flood_runs_in_window: aRunsInWindow,
    };
  } finally {
    await producer.disconnect();
    await floodProducer.disconnect();
    await ingester.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await api.close();
  }
}
