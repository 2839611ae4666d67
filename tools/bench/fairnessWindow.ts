/**
 * One window of a fairness round, measured: B's record → API latencies (p50, p99), the ingester's share (record →
 * workflow start) and Temporal's and the worker's (each execution's history), and the window's slowest records one
 * by one. The round that makes the windows is ./fairness.ts.
 */
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common/lib/time';
import { workflowId } from 'poimen-relay/internal/contract/index';
import type { RunsApiDouble } from '#devstack/runsApiDouble';
import { mapLimit, percentile, round } from './measure';
import type { BenchTarget } from './rig';

/** One of B's records: its dispatch key, when it was sent, and when Kafka acknowledged it (set once it has). */
export interface Sent {
  key: string;
  sentAtMs: number;
  ackedAtMs?: number;
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
  const total = new Map(sent.map((s) => [s.key, (received.get(s.key) ?? nowMs) - s.sentAtMs]));
  const ms = [...total.values()].sort((a, b) => a - b);
  // Sent → acknowledged by Kafka: the producer's and the broker's part, before the relay can see the record.
  const produce = sent
    .flatMap((s) => (s.ackedAtMs === undefined ? [] : [s.ackedAtMs - s.sentAtMs]))
    .sort((a, b) => a - b);
  return {
    n: sent.length,
    unserved,
    p50_ms: percentile(ms, 50),
    p99_ms: percentile(ms, 99),
    produce_p99_ms: percentile(produce, 99),
    total,
  };
}

/** How many of a window's slowest records the result lists one by one: the p99 of ~300 is the third slowest. */
const SLOWEST = 5;

/** The window's slowest records: when each was sent (s into the window) and where its time went. */
function slowest(sent: Sent[], total: Map<string, number>, detail: Map<string, KeyDetail>) {
  const t0 = sent[0]?.sentAtMs ?? 0;
  return [...sent]
    .sort((x, y) => (total.get(y.key) ?? 0) - (total.get(x.key) ?? 0))
    .slice(0, SLOWEST)
    .map((s) => ({
      at_s: round((s.sentAtMs - t0) / 1000),
      total_ms: total.get(s.key),
      // Sent → acknowledged by the broker: the part of the latency spent before the record was in Kafka.
      ...(s.ackedAtMs === undefined ? {} : { produce_ms: s.ackedAtMs - s.sentAtMs }),
      ...(detail.get(s.key) ?? {}),
    }));
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

/** One record's record → start time and its stages after the start (when its history had them). */
interface KeyDetail {
  to_start_ms: number;
  stages?: Stages;
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
  const byKey = new Map<string, KeyDetail>();
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
        byKey.set(s.key, { to_start_ms: d.startTime.getTime() - s.sentAtMs, ...(st ? { stages: st } : {}) });
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
    byKey,
  };
}

/** A window's figures: latencies, the ingester's and Temporal's shares, the slowest records one by one. */
export async function windowFigures(
  t: BenchTarget,
  tenant: string,
  api: RunsApiDouble,
  sent: Sent[],
  nowMs: number,
) {
  const { total, ...lat } = latencies(api, sent, nowMs);
  const { byKey, ...started } = await startedAfter(t, tenant, sent);
  return { ...lat, ...started, slowest: slowest(sent, total, byKey) };
}
