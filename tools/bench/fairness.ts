/**
 * One round of the fairness phase: tenant B publishes a steady trickle, first alone, then while
 * tenant A publishes a large backlog at once. B's record→API latency in both windows of the same round says
 * whether A's flood makes B wait behind it; the history of each of B's executions says where the wait is. The
 * rounds, and what each changes, are in ./fairnessPhase.ts.
 */
import path from 'node:path';
import type { Producer } from 'kafkajs';
import { topics } from 'poimen-relay/internal/contract/index';
import { freePort } from '#devstack/ports';
import { startRelayProcess } from '#devstack/relayProcess';
import { waitUntil } from 'poimen-relay/internal/poll';
import { RunsApiDouble } from '#devstack/runsApiDouble';
import { cpuWindow, perSecond } from './cpu';
import { round } from './measure';
import { type Sent, windowFigures } from './fairnessWindow';
import { startFlood } from './flood';
import { loneClosesSeen, sampleOpen } from './ingesterMetrics';
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
  /** Records tenant A publishes in the lone rounds (its throughput with no other tenant). */
  loneN: number;
  /**
   * How often each lone round runs, interleaved (A B B A …): one run of each differs by as much as admission
   * could cost on a shared 2-core machine, so the figure is each round's median.
   */
  loneRepeats: number;
  /** The rounds to run (fairnessPhase.ts names them); all when absent. */
  rounds?: readonly string[];
  /** B's unmeasured trickle before its alone window, in s; WARMUP_S when absent. */
  warmupS?: number;
}

/** The flood's first seconds, whose CPU per process a round reports on its own. */
const FIRST_SECONDS = 2;

/** B's unmeasured trickle before its alone window: enough for a fresh dev server and relay. */
const WARMUP_S = 5;

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
      const batch: Sent[] = Array.from({ length: due - sent.length }, (_, i) => ({
        key: `${prefix}-${sent.length + i}`,
        sentAtMs: Date.now(),
      }));
      sent.push(...batch);
      await producer.send({
        topic: topics.dispatch(tenant),
        acks: 1,
        messages: batch.map((s) => ({ value: dispatchValue(s.key, s.sentAtMs) })),
      });
      const ackedAtMs = Date.now();
      for (const s of batch) s.ackedAtMs = ackedAtMs;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return sent;
}

/**
 * One round's relay: a runs API double, one worker and one ingester for `tenants`, on the round's own queue.
 * `settings` are the relay's only variables beyond the addresses (none: the shipped defaults).
 */
async function startRoundRelay(
  t: BenchTarget,
  round: { kind: 'fair' | 'lone'; label: string; tenants: string[] },
  settings: Record<string, string>,
) {
  const api = await RunsApiDouble.start({ record: true });
  const [first] = round.tenants as [string];
  const env = relayEnv(t, api, {
    TEMPORAL_TASK_QUEUE: `bench-${round.kind}-${first}`,
    KAFKA_GROUP_ID: `bench-${round.kind}-${first}`,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.(${round.tenants.join('|')})\\.dispatch$`,
    ...settings,
  });
  const name = `${round.kind === 'fair' ? 'fairness' : 'lone'}-${round.label}`;
  const workers = await startWorkers(t, env, 1, name);
  const ingester = await startRelayProcess({
    role: 'ingest',
    env,
    metricsPort: await freePort(),
    logFile: path.join(t.logsDir, `bench-${name}-ingest.log`),
  });
  return {
    api,
    ingester,
    workers,
    /** Each process role's pids, for CPU windows over the round. */
    pids: {
      ingester: [ingester.child.pid!],
      worker: workers.map((w) => w.child.pid!),
      ...(t.serverPids?.() ?? { temporal: [], postgres: [], kafka: [] }),
    },
    async stop() {
      await ingester.stop();
      await Promise.all(workers.map((w) => w.stop()));
      await api.close();
    },
  };
}

export async function fairnessRound(
  t: BenchTarget,
  o: FairnessOptions,
  label: string,
  settings: Record<string, string>,
) {
  const a = await newTenant(t, o.partitions);
  const b = await newTenant(t, o.partitions);
  const relay = await startRoundRelay(t, { kind: 'fair', label, tenants: [a, b] }, settings);
  const { api, pids } = relay;
  const producer = t.kafka.producer();
  await producer.connect();
  let floodProducer: Awaited<ReturnType<typeof startFlood>> | undefined;
  const runsOf = (tenant: string) =>
    api.requests.filter((r) => r.answer === 201 && r.headers['x-tenant-id'] === tenant).length;
  try {
    // A's producer is a process of its own (floodProducer.ts), connected before the windows open.
    floodProducer = await startFlood(t, topics.dispatch(a), o.floodN);
    // CPU ms per second of each process over each window: whether the flood saturates the machine, and where.
    let cpu = cpuWindow(pids);
    // A warm-up first, not measured: a fresh worker's and server's first executions took 200-300 ms, and three
    // such records are the p99 of a 300-record window (B alone's p99 was its warm-up, flattering the ratio).
    await trickle(producer, b, o.steadyPerS, 'warmup', Date.now() + (o.warmupS ?? WARMUP_S) * 1000);
    const alone = await trickle(producer, b, o.steadyPerS, 'alone', Date.now() + o.aloneS * 1000);
    const aloneCpu = perSecond(cpu.end(), o.aloneS);
    cpu = cpuWindow(pids);
    // The flood goes out at once beside the trickle: A's records in 1000-record sends, as fast as Kafka takes them.
    const floodStart = Date.now();
    const flood = floodProducer.publish();
    flood.catch(() => undefined); // awaited after B's window; a failure is thrown there
    // The flood's first seconds apart: B's slowest records fall there, while A's records are being published.
    const firstCpu = cpuWindow(pids);
    const firstSeconds = new Promise<ReturnType<typeof perSecond>>((resolve) =>
      setTimeout(() => resolve(perSecond(firstCpu.end(), FIRST_SECONDS)), FIRST_SECONDS * 1000),
    );
    const flooded = await trickle(producer, b, o.steadyPerS, 'flooded', floodStart + o.floodedS * 1000);
    const floodedCpu = perSecond(cpu.end(), o.floodedS);
    const { ms: floodPublishMs, cpuMs: floodProducerCpuMs } = await flood;
    const firstSecondsCpu = await firstSeconds;
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
      alone: { ...(await windowFigures(t, b, api, alone, now)), cpu_ms_per_s: aloneCpu },
      flooded: { ...(await windowFigures(t, b, api, flooded, now)), cpu_ms_per_s: floodedCpu },
      flood_n: o.floodN,
      flood_publish_s: round(floodPublishMs / 1000),
      // The flood's producer is no part of the relay, but it shares the bench's cores with it while it publishes.
      flood_producer_cpu_ms: floodProducerCpuMs,
      first_seconds_cpu_ms_per_s: firstSecondsCpu,
      // How much of A's flood the relay had served when B's flooded window closed: A was still queued throughout.
      flood_runs_in_window: aRunsInWindow,
    };
  } finally {
    await producer.disconnect();
    await floodProducer?.stop();
    await relay.stop();
  }
}

/**
 * Tenant A alone: `o.loneN` records published at once, nothing else on the relay. Its runs per second from its
 * first run to its last say whether admission caps a lone tenant (work-conserving: the same rate as without it);
 * its CPU per dispatch in each process, what admission costs it; and what admission kept open while A still had
 * records waiting in Kafka (its gauge read every 250 ms), whether the pipeline downstream ever ran short of work.
 */
export async function loneRound(
  t: BenchTarget,
  o: FairnessOptions,
  label: string,
  settings: Record<string, string>,
) {
  const a = await newTenant(t, o.partitions);
  const relay = await startRoundRelay(t, { kind: 'lone', label, tenants: [a] }, settings);
  const { api, ingester, pids } = relay;
  const producer = t.kafka.producer();
  await producer.connect();
  let open_samples: number[];
  try {
    // CPU of each process from the first send to the last run: what a dispatch costs each, with and without admission.
    const cpu = cpuWindow(pids);
    for (let i = 0; i < o.loneN; i += 1000) {
      const keys = Array.from({ length: Math.min(1000, o.loneN - i) }, (_, j) => `lone-${i + j}`);
      await producer.send({
        topic: topics.dispatch(a),
        acks: 1,
        messages: keys.map((k) => ({ value: dispatchValue(k) })),
      });
    }
    const runs = () => api.requests.filter((r) => r.answer === 201);
    const open = sampleOpen(ingester, a, () => {
      const n = runs().length;
      // From the first run until the last records are all open: what is left in Kafka then is less than a share.
      return n === 0 ? 'before' : n < o.loneN - LONE_TAIL ? 'during' : 'after';
    });
    try {
      await waitUntil(() => runs().length >= o.loneN, o.settleS * 1000, 500);
    } finally {
      open_samples = await open.stop();
    }
    const cpuMs = cpu.end();
    const closesSeen = await loneClosesSeen(ingester, a, o.settleS * 1000);
    const served = runs();
    const first = served[0]?.receivedAtMs ?? 0;
    const last = served.at(-1)?.receivedAtMs ?? first;
    return {
      n: o.loneN,
      served: served.length,
      runs_per_s: last > first ? round((served.length - 1) / ((last - first) / 1000)) : 0,
      cpu_ms: cpuMs,
      // Empty without admission (the gauge is not set): nothing is counted then.
      open_samples,
      closes_seen: closesSeen,
    };
  } finally {
    await producer.disconnect();
    await relay.stop();
  }
}

/** Runs before the end of a lone round not counted as backlogged: more than a lone tenant keeps open (250). */
const LONE_TAIL = 300;
