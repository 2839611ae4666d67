/**
 * The fairness phase (issue 14 item 1): tenant B publishes a steady trickle; first alone, then while tenant A
 * publishes a large backlog at once. B's record→API latency in both windows of the same run says whether A's flood
 * makes B wait behind it. The phase runs once against a Temporal with task queue fairness and once against one
 * without, the same relay code in both: without fairness the server ignores the fairness keys and serves the queue
 * first come, first served, as it did before the relay set them. (The ingester's turns, the other half of the
 * change, are in both rounds; what they changed is in docs/performance.md.)
 */
import path from 'node:path';
import type { Producer } from 'kafkajs';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common/lib/time';
import { topics, workflowId } from '../../src/contract';
import { freePort } from '../../src/devstack/ports';
import { startRelayProcess } from '../../src/devstack/relayProcess';
import { waitUntil } from '../../src/poll';
import { RunsApiDouble } from '../../test/support/runsApiDouble';
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
}

/**
 * The rounds, each on a fresh Temporal: admission per tenant with server fairness (the design), server fairness
 * alone (the design before admission), and neither (first come, first served, as before both).
 */
const ROUNDS = [
  {
    name: 'admission',
    serverFairness: true,
    admission: true,
    serverDefaultPollRate: false,
    fetch1MiB: false,
  },
  // The same with the dev server's one shard reading its transfer queue at the server's default 20/s instead of the
  // stack's 160/s (src/devstack/stack/devServerTuning.ts): what that per-shard limit alone does to B.
  {
    name: 'admission_poll20',
    serverFairness: true,
    admission: true,
    serverDefaultPollRate: true,
    fetch1MiB: false,
  },
  // The same with the ingester fetching 1 MiB per partition, its default without admission, instead of 64 KiB.
  {
    name: 'admission_fetch1mib',
    serverFairness: true,
    admission: true,
    serverDefaultPollRate: false,
    fetch1MiB: true,
  },
  { name: 'on', serverFairness: true, admission: false, serverDefaultPollRate: false, fetch1MiB: false },
  { name: 'off', serverFairness: false, admission: false, serverDefaultPollRate: false, fetch1MiB: false },
] as const;
/** The server's own default for `history.transferProcessorMaxPollRPS`, given back to one round. */
const SERVER_DEFAULT_POLL_RATE = ['history.transferProcessorMaxPollRPS=20'];
type RoundName = (typeof ROUNDS)[number]['name'];
type Round = Awaited<ReturnType<typeof fairnessRound>>;

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

/** A Temporal for one round: fresh, with or without task queue fairness, stopped after its round. */
export interface FairnessServers {
  /** `dynamicConfig`: key=value pairs given to the server after the stack's own (so they win). */
  start(fairness: boolean, dynamicConfig?: string[]): Promise<{ target: BenchTarget; stop(): Promise<void> }>;
  /** What each server is, for the result. */
  describe: string;
}

export async function fairness(servers: FairnessServers, o: FairnessOptions, progress: (l: string) => void) {
  const rounds: Record<RoundName, Round> = {} as never;
  const run = async (
    label: string,
    serverFairness: boolean,
    maxOpen: number,
    dynamicConfig: string[] = [],
    env: Record<string, string> = {},
  ) => {
    const settings = [...dynamicConfig, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)];
    progress(
      `fairness ${label} (server fairness ${serverFairness ? 'on' : 'off'}, POIMEN_INGEST_TENANT_MAX_OPEN=${maxOpen}${settings.map((kv) => `, ${kv}`).join('')}): tenant B at ${o.steadyPerS}/s, ${o.aloneS} s alone, then ${o.floodedS} s while tenant A floods ${o.floodN} records`,
    );
    const server = await servers.start(serverFairness, dynamicConfig);
    try {
      return await fairnessRound(server.target, o, label, maxOpen, env);
    } finally {
      await server.stop();
    }
  };
  for (const r of ROUNDS) {
    rounds[r.name] = await run(
      r.name,
      r.serverFairness,
      r.admission ? o.tenantMaxOpen : 0,
      r.serverDefaultPollRate ? SERVER_DEFAULT_POLL_RATE : [],
      r.fetch1MiB ? { POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION: String(1024 * 1024) } : {},
    );
  }
  const sweep: Record<string, Round> = {};
  for (const n of o.tenantMaxOpenSweep) sweep[String(n)] = await run(`admission-${n}`, true, n);
  const ratio = (r: (typeof rounds)['on']) => round(r.flooded.p99_ms / r.alone.p99_ms, 2);
  return {
    fairness_b_p50_ms_alone: rounds.admission.alone.p50_ms,
    fairness_b_p99_ms_alone: rounds.admission.alone.p99_ms,
    fairness_b_p50_ms_flooded: rounds.admission.flooded.p50_ms,
    fairness_b_p99_ms_flooded: rounds.admission.flooded.p99_ms,
    fairness_p99_ratio: ratio(rounds.admission),
    // The same design on a dev server whose one shard reads its transfer queue at the server's default rate.
    fairness_poll20_b_p99_ms_alone: rounds.admission_poll20.alone.p99_ms,
    fairness_poll20_b_p99_ms_flooded: rounds.admission_poll20.flooded.p99_ms,
    fairness_poll20_p99_ratio: ratio(rounds.admission_poll20),
    // The same design with the ingester fetching 1 MiB per partition (its default without admission).
    fairness_fetch1mib_b_p99_ms_alone: rounds.admission_fetch1mib.alone.p99_ms,
    fairness_fetch1mib_b_p99_ms_flooded: rounds.admission_fetch1mib.flooded.p99_ms,
    fairness_fetch1mib_p99_ratio: ratio(rounds.admission_fetch1mib),
    // Server fairness without admission per tenant: the design before admission.
    fairness_unbounded_b_p99_ms_alone: rounds.on.alone.p99_ms,
    fairness_unbounded_b_p99_ms_flooded: rounds.on.flooded.p99_ms,
    fairness_unbounded_p99_ratio: ratio(rounds.on),
    // The same phase on a Temporal without fairness: every task of the queue first come, first served.
    fairness_off_b_p99_ms_alone: rounds.off.alone.p99_ms,
    fairness_off_b_p99_ms_flooded: rounds.off.flooded.p99_ms,
    fairness_off_p99_ratio: ratio(rounds.off),
    // Records of B never served in the off round count with what they had waited: its figures are lower bounds.
    fairness_off_lower_bound: rounds.off.flooded.unserved > 0,
    fairness_rounds: rounds,
    // B's p99 ratio and A's runs in the window for each further bound: less open, B faster and A slower.
    fairness_sweep: Object.fromEntries(
      Object.entries(sweep).map(([n, r]) => [
        n,
        { p99_ratio: ratio(r), b_p99_ms_flooded: r.flooded.p99_ms, a_runs_in_window: r.flood_runs_in_window },
      ]),
    ),
    fairness_sweep_rounds: sweep,
    fairness_settings: { ...o, servers: servers.describe },
  };
}
