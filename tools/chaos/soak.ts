/**
 * The chaos soak (issue 6): dispatches with duplicates and malformed records are published while a
 * controller SIGKILLs and restarts the ingester, the two workers, the Kafka broker and the Temporal server,
 * and the runs API answers a share of 503s and drops sockets. Afterwards it checks the promise the relay
 * sells — nothing lost, nothing doubled — against the wire (the API double's requests), Kafka (DLQ records,
 * group lag) and Temporal (executions), never against the relay's own account of itself.
 *
 * `npm run chaos` (tools/chaos/main.ts) runs the full soak; test/it_chaos.test.ts runs the quick one.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { childEnv } from '../../src/config';
import { topics, workflowId } from '../../src/contract';
import { committedAtLogEnd } from '../bench/groupOffsets';
import { freePort } from '../../src/devstack/ports';
import { type RelayProcess, startRelayProcess } from '../../src/devstack/relayProcess';
import { type Fault, RunsApiDouble } from '../../test/support/runsApiDouble';
import { readDeadLetters } from '../../src/kafka/dlqReader';
import { ensureTopics, tenantTopicSpecs } from '../../src/kafka/topics';
import type { ServiceName } from '../../src/devstack/stack/services';
import {
  type DedupAccount,
  type DlqAccount,
  type FaultWindow,
  type RewindWindow,
  dedupAccount,
  dlqAccount,
} from './account';

/** Kills and restarts the shared services; the local stack or testcontainers provide it. */
export interface ServiceControl {
  kill(name: ServiceName): Promise<void>;
  /** Starts the service and resolves once its real client says it is ready. */
  start(name: ServiceName): Promise<void>;
}

export interface SoakOptions {
  kafkaBrokers: string;
  temporalAddress: string;
  namespace: string;
  services: ServiceControl;
  logsDir: string;
  /** Records published in all: unique valid ones, ~10 % duplicates, ~2 % malformed. */
  dispatches: number;
  duplicateShare?: number;
  malformedShare?: number;
  /** Publishing is spread over this long, so faults land in the middle of the traffic. */
  publishSeconds: number;
  /** Faults go on at least this long (and until publishing is done). */
  faultSeconds: number;
  /** Pause between one component back up and the next kill, drawn uniformly from this range. */
  faultGapMs?: [number, number];
  /** How long a killed component stays down. */
  downMs?: [number, number];
  /** The runs API's answers when nothing else is scripted. */
  apiUnavailableShare?: number;
  apiDropShare?: number;
  partitions?: number;
  drainTimeoutMs: number;
  seed?: number;
  /** Extra relay environment (e.g. faster retries for the quick run). */
  env?: Record<string, string>;
  /** Ingesters in the one consumer group (default 2); a kill takes one of them. */
  ingesters?: number;
  progress?: (message: string) => void;
}

export type Victim = 'ingester' | 'worker' | 'kafka' | 'temporal';

export interface SoakResult {
  /** Records published to `.dispatch`, duplicates and malformed ones included. */
  dispatches: number;
  unique_valid: number;
  duplicates: number;
  malformed: number;
  /** Unique valid dispatch keys with a run at the API. */
  runs: number;
  /** Unique valid dispatch keys with no run. */
  lost: number;
  /** Runs the API created beyond one per dispatch key. */
  duplicate_runs: number;
  /**
   * Workflow ids with more than one execution of any status: the relay's own share of "never twice" (the API
   * double's dedup makes `duplicate_runs` 0 by construction once the relay sends the right key).
   */
  duplicate_executions: number;
  /** DLQ records written in all; matched: one per malformed record; unexpected: for valid dispatches. */
  dlq: number;
  /**
   * Distinct DLQ record ids. A malformed record redelivered after a crash is dead-lettered again under the
   * same id (derived from its source coordinates), so dlq − dlq_distinct_ids counts such repeats.
   */
  dlq_distinct_ids: number;
  dlq_malformed_matched: number;
  dlq_unexpected: number;
  /** Malformed records whose DLQ record carries no reason. */
  dlq_without_reason: number;
  /** The exactly-once account of the relay's calls: every 409 tied to a fault that can cause it. */
  dedup: DedupAccount;
  /** Dead letters per id: a repeat only where an ingester kill, a broker kill or a rebalance rewound it. */
  dlq_account: DlqAccount;
  executions_running: number;
  consumer_group_lag: number;
  /** The group's committed offsets equal the log end on every dispatch partition after the drain. */
  committed_at_log_end: boolean;
  kills: Record<Victim, number> & { total: number };
  api: { requests: number; unavailable_503: number; dropped: number; dedup_409: number };
  posts_per_valid_dispatch: number;
  publish_s: number;
  fault_window_s: number;
  drain_after_last_fault_s: number;
  drained: boolean;
  seed: number;
  settings: Record<string, unknown>;
}

/** A small seeded PRNG (mulberry32), so a soak's schedule can be re-run from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Planned {
  key: string | null;
  value: Buffer | null;
  kind: 'valid' | 'duplicate' | 'malformed';
  /** Malformed: the marker its DLQ record must carry (in the payload or the record key). */
  marker?: string;
  expectType?: 'malformed_dispatch' | 'tenant_mismatch';
}

/** Malformed shapes, cycled: each carries its marker where the DLQ record keeps it. */
function malformed(tenant: string, marker: string, n: number): Planned {
  const shapes: [Buffer | null, 'malformed_dispatch' | 'tenant_mismatch'][] = [
    [Buffer.from(`{"dispatch_key": "${marker}", "workflow_ref": `), 'malformed_dispatch'],
    [Buffer.from(JSON.stringify([marker])), 'malformed_dispatch'],
    [Buffer.from(JSON.stringify({ dispatch_key: marker, input: {} })), 'malformed_dispatch'],
    [
      Buffer.from(JSON.stringify({ workflow_ref: 'chaos@v1', input: {}, dispatch_key: `${marker} bad` })),
      'malformed_dispatch',
    ],
    [
      Buffer.from(
        JSON.stringify({
          workflow_ref: 'chaos@v1',
          input: {},
          dispatch_key: marker,
          tenant_id: `${tenant}x`,
        }),
      ),
      'tenant_mismatch',
    ],
    [
      Buffer.concat([
        Buffer.from(`{"dispatch_key":"${marker}","x":"`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]),
      'malformed_dispatch',
    ],
    [null, 'malformed_dispatch'],
  ];
  const [value, expectType] = shapes[n % shapes.length]!;
  return { key: marker, value, kind: 'malformed', marker, expectType };
}

function plan(
  tenant: string,
  run: string,
  total: number,
  dupShare: number,
  badShare: number,
  rnd: () => number,
) {
  const records: Planned[] = [];
  const valid: Planned[] = [];
  let bad = 0;
  for (let i = 0; i < total; i++) {
    const r = rnd();
    if (r < badShare) {
      // Fixed width: no marker is a substring of another, so matching a DLQ record to its source is exact.
      records.push(malformed(tenant, `chaos-bad-${run}-${String(i).padStart(7, '0')}`, bad++));
    } else if (r < badShare + dupShare && valid.length > 0) {
      const original = valid[Math.floor(rnd() * valid.length)]!;
      records.push({ ...original, kind: 'duplicate' });
    } else {
      const key = `chaos-${run}-${i}`;
      const p: Planned = {
        key: `${tenant}:${key}`,
        value: Buffer.from(
          JSON.stringify({ workflow_ref: 'chaos@v1', input: { i }, goal_id: null, dispatch_key: key }),
        ),
        kind: 'valid',
      };
      records.push(p);
      valid.push(p);
    }
  }
  return records;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * How long an API answer can take to become the activity's recorded result (answer → worker → Temporal) on a
 * loaded 2-core machine; measured in milliseconds, bounded generously so a fault window is never too narrow.
 */
const ANSWER_TO_COMPLETION_MS = 3000;
const between = (rnd: () => number, [lo, hi]: [number, number]) => lo + Math.floor(rnd() * (hi - lo));

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const say = opts.progress ?? (() => undefined);
  const seed = opts.seed ?? crypto.randomInt(2 ** 31);
  const rnd = prng(seed);
  const run = crypto.randomBytes(4).toString('hex');
  const tenant = `chaos${run}`;
  const taskQueue = `chaos-${run}`;
  const groupId = `chaos-${run}`;
  const partitions = opts.partitions ?? 4;
  const kafka = new Kafka({
    clientId: 'poimen-chaos',
    brokers: [opts.kafkaBrokers],
    logLevel: logLevel.NOTHING,
  });

  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, tenantTopicSpecs(tenant, { partitions }));
  await admin.disconnect();

  const unavailable = opts.apiUnavailableShare ?? 0.2;
  const drop = opts.apiDropShare ?? 0.03;
  const api = await RunsApiDouble.start({ record: true });
  // The API's own randomness is separate from the schedule's, so the schedule replays from the seed.
  const apiRnd = prng(seed ^ 0x5eed);
  const droppedAfterAdmit = new Map<string, number>();
  api.faultPolicy((key): Fault | undefined => {
    const r = apiRnd();
    if (r < unavailable) return { kind: 'status', status: 503 };
    // Half the drops happen after the run was admitted: the answer is lost, the retry must see 409.
    if (r < unavailable + drop / 2) return { kind: 'drop' };
    if (r < unavailable + drop) {
      if (key !== undefined) droppedAfterAdmit.set(key, (droppedAfterAdmit.get(key) ?? 0) + 1);
      return { kind: 'drop', afterAdmit: true };
    }
    return undefined;
  });

  const env = childEnv({
    KAFKA_BROKERS: opts.kafkaBrokers,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_NAMESPACE: opts.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    KAFKA_GROUP_ID: groupId,
    DISPATCH_TOPIC_PATTERN: `^poimen\\.${tenant}\\.dispatch$`,
    RUNS_API_URL: api.url,
    LOG_LEVEL: 'warn',
    ...opts.env,
  });
  const logFile = (name: string) => path.join(opts.logsDir, `chaos-${run}-${name}.log`);
  const ingesterNames = Array.from({ length: opts.ingesters ?? 2 }, (_, i) => `ingester-${i + 1}`);
  const relay: Record<string, RelayProcess | undefined> = {};
  const startRelay = async (name: string) => {
    relay[name] = await startRelayProcess({
      role: name.startsWith('ingester') ? 'ingest' : 'worker',
      env,
      metricsPort: await freePort(),
      logFile: logFile(name),
      readyTimeoutMs: 120_000,
    });
  };

  const records = plan(
    tenant,
    run,
    opts.dispatches,
    opts.duplicateShare ?? 0.1,
    opts.malformedShare ?? 0.02,
    rnd,
  );
  const uniqueValid = records.filter((r) => r.kind === 'valid');
  const validKeys = new Set(
    uniqueValid.map((r) => (JSON.parse(r.value!.toString('utf8')) as { dispatch_key: string }).dispatch_key),
  );
  const bad = records.filter((r) => r.kind === 'malformed');

  // The DLQ is read once the faults are over, whole, by a throwaway group that commits nothing: a consumer
  // left running through broker kills would restart itself in the background, past the end of the soak.
  type SeenDlq = {
    id: string;
    partition: number;
    offset: number;
    key: string;
    type: string;
    error: string;
    payload: string;
    dispatchKey: string | null;
  };
  let dlqSeen: SeenDlq[] = [];
  const readDlq = async (): Promise<SeenDlq[]> => {
    const seen: SeenDlq[] = [];
    const a = kafka.admin();
    await a.connect();
    try {
      const letters = await readDeadLetters(kafka, a, topics.dlq(tenant), {
        groupPrefix: `chaos-dlq-reader-${run}`,
      });
      for (const { key, record: rec } of letters) {
        const payload = rec?.payload_base64
          ? Buffer.from(rec.payload_base64, 'base64').toString('latin1')
          : (rec?.payload ?? '');
        seen.push({
          id: rec?.id ?? '',
          partition: rec?.source.partition ?? -1,
          offset: Number(rec?.source.offset ?? -1),
          key: key?.toString('utf8') ?? '',
          type: rec?.type ?? 'unparseable',
          error: rec?.error ?? '',
          payload,
          dispatchKey: rec?.dispatch_key ?? null,
        });
      }
    } finally {
      await a.disconnect();
    }
    return seen;
  };

  const kills: SoakResult['kills'] = { ingester: 0, worker: 0, kafka: 0, temporal: 0, total: 0 };
  let lastFaultEndMs = Date.now();
  let publishS = 0;
  const faultStart = Date.now();
  const producer: Producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 3000 },
  });
  let connection: Connection | undefined;
  try {
    say(
      `tenant ${tenant}, ${records.length} records (${uniqueValid.length} unique valid, ${bad.length} malformed), seed ${seed}`,
    );
    await startRelay('worker-a');
    await startRelay('worker-b');
    for (const name of ingesterNames) await startRelay(name);
    await producer.connect();

    let published = 0;
    const publisher = (async () => {
      const t0 = Date.now();
      const perMs = records.length / (opts.publishSeconds * 1000);
      while (published < records.length) {
        const due = Math.min(records.length, Math.ceil((Date.now() - t0) * perMs) + 1);
        const batch = records.slice(published, due);
        if (batch.length > 0) {
          // Kafka may be down for a while: the publisher keeps trying (bounded), as a real producer would.
          const deadline = Date.now() + 180_000;
          for (;;) {
            try {
              await producer.send({
                topic: topics.dispatch(tenant),
                acks: -1,
                messages: batch.map((r) => ({ key: r.key, value: r.value })),
              });
              break;
            } catch (err) {
              if (Date.now() > deadline) throw err;
              await sleep(500);
            }
          }
          published = due;
        }
        await sleep(100);
      }
      publishS = (Date.now() - t0) / 1000;
    })();

    const victims: Victim[] = ['ingester', 'worker', 'kafka', 'temporal'];
    const faultWindows: FaultWindow[] = [];
    const pendingRewinds: Promise<RewindWindow[]>[] = [];
    // The group's committed offsets now (a partition never committed counts from 0); retried through a restart.
    const committedNow = async (): Promise<Map<number, number>> => {
      for (;;) {
        const a = kafka.admin();
        try {
          await a.connect();
          const [c] = await a.fetchOffsets({ groupId, topics: [topics.dispatch(tenant)] });
          return new Map((c?.partitions ?? []).map((p) => [p.partition, Math.max(0, Number(p.offset))]));
        } catch {
          await sleep(500);
        } finally {
          await a.disconnect().catch(() => undefined);
        }
      }
    };
    // A rewind reaches every record uncommitted before the event and published until the group settled after
    // it (a killed member's partitions move only when its session expires).
    const settleMs = Number(env.POIMEN_KAFKA_SESSION_TIMEOUT_MS ?? 30_000) + 5_000;
    const rewindAfterSettle = async (before: Map<number, number>): Promise<RewindWindow[]> => {
      await sleep(settleMs);
      for (;;) {
        const a = kafka.admin();
        try {
          await a.connect();
          const high = await a.fetchTopicOffsets(topics.dispatch(tenant));
          return high.map((p) => ({
            partition: p.partition,
            from: before.get(p.partition) ?? 0,
            to: Number(p.high),
          }));
        } catch {
          await sleep(500);
        } finally {
          await a.disconnect().catch(() => undefined);
        }
      }
    };
    const gap = opts.faultGapMs ?? [2000, 6000];
    const down = opts.downMs ?? [200, 3000];
    let publishDone = false;
    void publisher.then(
      () => (publishDone = true),
      () => (publishDone = true),
    );
    // Every kind of fault at least once per round, in a random order per round.
    while (!publishDone || Date.now() - faultStart < opts.faultSeconds * 1000) {
      const round = [...victims].sort(() => rnd() - 0.5);
      for (const victim of round) {
        await sleep(between(rnd, gap));
        const which =
          victim === 'worker'
            ? rnd() < 0.5
              ? 'worker-a'
              : 'worker-b'
            : victim === 'ingester'
              ? ingesterNames[Math.floor(rnd() * ingesterNames.length)]!
              : victim;
        say(`kill -9 ${which}`);
        const rewinds = victim === 'ingester' || victim === 'kafka';
        const committedBefore = rewinds ? await committedNow() : undefined;
        const killedAtMs = Date.now();
        if (which === 'kafka' || which === 'temporal') {
          await opts.services.kill(which);
          await sleep(between(rnd, down));
          await opts.services.start(which);
        } else {
          await relay[which]?.kill();
          await sleep(between(rnd, down));
          await startRelay(which);
        }
        if (victim === 'worker') {
          faultWindows.push({
            fromMs: killedAtMs - ANSWER_TO_COMPLETION_MS,
            toMs: killedAtMs,
            cause: 'worker_kill',
          });
        } else if (victim === 'temporal') {
          faultWindows.push({
            fromMs: killedAtMs - ANSWER_TO_COMPLETION_MS,
            toMs: Date.now() + ANSWER_TO_COMPLETION_MS,
            cause: 'temporal_outage',
          });
        }
        if (committedBefore) pendingRewinds.push(rewindAfterSettle(committedBefore));
        kills[victim]++;
        kills.total++;
        lastFaultEndMs = Date.now();
      }
    }
    await publisher;
    say(`faults over after ${kills.total} kills; waiting for the drain`);

    // Drained: every valid key has a run, every malformed record its DLQ record, nothing Running, no lag.
    connection = await Connection.connect({ address: opts.temporalAddress });
    const client = new Client({ connection, namespace: opts.namespace });
    const lagOf = async (): Promise<number> => {
      const a = kafka.admin();
      await a.connect();
      try {
        const high = await a.fetchTopicOffsets(topics.dispatch(tenant));
        const [committed] = await a.fetchOffsets({ groupId, topics: [topics.dispatch(tenant)] });
        let lag = 0;
        for (const p of high) {
          const c = committed?.partitions.find((x) => x.partition === p.partition)?.offset ?? '-1';
          lag += Number(p.high) - Math.max(0, Number(c));
        }
        return lag;
      } finally {
        await a.disconnect();
      }
    };
    const matched = () => {
      const payloads = dlqSeen.map((d) => `${d.key}\u0000${d.payload}`);
      return bad.filter((b) => payloads.some((p) => p.includes(b.marker!))).length;
    };
    const running = async () =>
      (await client.workflow.count(`TaskQueue="${taskQueue}" AND ExecutionStatus="Running"`)).count;
    let drained = false;
    let drainedAtMs = Date.now();
    const deadline = Date.now() + opts.drainTimeoutMs;
    while (Date.now() < deadline) {
      const runsDone = [...validKeys].every((k) => api.runs.has(k));
      if (runsDone) dlqSeen = await readDlq().catch(() => dlqSeen);
      if (runsDone && matched() === bad.length) {
        const [r, lag] = await Promise.all([running().catch(() => -1), lagOf().catch(() => -1)]);
        if (r === 0 && lag === 0) {
          drained = true;
          drainedAtMs = Date.now();
          break;
        }
      }
      await sleep(500);
    }
    if (!drained) drainedAtMs = Date.now();

    // The final account, from the API's wire, Kafka and Temporal.
    if (!drained) dlqSeen = await readDlq().catch(() => dlqSeen);
    const created = new Map<string, number>();
    let unavailable503 = 0;
    let dropped = 0;
    let dedup = 0;
    let validPosts = 0;
    for (const r of api.requests) {
      const k = (r.json as { dispatch_key?: string } | undefined)?.dispatch_key ?? '';
      if (validKeys.has(k)) validPosts++;
      if (r.answer === 201) created.set(k, (created.get(k) ?? 0) + 1);
      if (r.answer === 503) unavailable503++;
      if (r.answer === 'dropped') dropped++;
      if (r.answer === 409) dedup++;
    }
    // A drop after admission creates the run without a 201 on the wire; api.runs is the API's own truth.
    const runs = [...validKeys].filter((k) => api.runs.has(k)).length;
    const duplicateRuns = [...created.values()].reduce((s, c) => s + Math.max(0, c - 1), 0);
    // Executions per workflow id, once visibility lists every valid key's (it trails the executions).
    const listExecutions = async () => {
      const perId = new Map<string, number>();
      for await (const wf of client.workflow.list({ query: `TaskQueue="${taskQueue}"` })) {
        perId.set(wf.workflowId, (perId.get(wf.workflowId) ?? 0) + 1);
      }
      return perId;
    };
    let executionsPerId = new Map<string, number>();
    const wantIds = [...validKeys].map((k) => workflowId(tenant, k));
    const visibilityDeadline = Date.now() + 120_000;
    do {
      executionsPerId = await listExecutions().catch(() => executionsPerId);
      if (wantIds.every((id) => executionsPerId.has(id))) break;
      await sleep(1000);
    } while (Date.now() < visibilityDeadline);
    const duplicateExecutions = [...executionsPerId.values()].filter((c) => c > 1).length;
    const atLogEnd = await committedAtLogEnd(kafka, groupId, [topics.dispatch(tenant)], 30_000);
    const dedupAcc = dedupAccount(
      api.requests.map((r) => ({
        dispatchKey: (r.json as { dispatch_key?: string } | undefined)?.dispatch_key,
        answer: r.answer,
        receivedAtMs: r.receivedAtMs,
      })),
      droppedAfterAdmit,
      faultWindows,
    );
    const dlqAcc = dlqAccount(
      dlqSeen.filter((d) => d.id !== ''),
      (await Promise.all(pendingRewinds)).flat(),
    );
    const executionsRunning = await running().catch(() => -1);
    const lag = await lagOf().catch(() => -1);
    const unexpected = dlqSeen.filter((d) => d.dispatchKey !== null && validKeys.has(d.dispatchKey)).length;
    const withoutReason = bad.filter((b) => {
      const d = dlqSeen.find((x) => `${x.key}\u0000${x.payload}`.includes(b.marker!));
      return d !== undefined && (d.error.trim() === '' || d.type !== b.expectType);
    }).length;

    return {
      dispatches: records.length,
      unique_valid: validKeys.size,
      duplicates: records.filter((r) => r.kind === 'duplicate').length,
      malformed: bad.length,
      runs,
      lost: validKeys.size - runs,
      duplicate_runs: duplicateRuns,
      duplicate_executions: duplicateExecutions,
      dlq: dlqSeen.length,
      dlq_distinct_ids: new Set(dlqSeen.map((d) => d.id)).size,
      dlq_malformed_matched: matched(),
      dlq_unexpected: unexpected,
      dlq_without_reason: withoutReason,
      dedup: dedupAcc,
      dlq_account: dlqAcc,
      executions_running: executionsRunning,
      consumer_group_lag: lag,
      committed_at_log_end: atLogEnd,
      kills,
      api: { requests: api.requests.length, unavailable_503: unavailable503, dropped, dedup_409: dedup },
      posts_per_valid_dispatch: Math.round((validPosts / Math.max(1, validKeys.size)) * 100) / 100,
      publish_s: Math.round(publishS * 10) / 10,
      fault_window_s: Math.round((lastFaultEndMs - faultStart) / 100) / 10,
      drain_after_last_fault_s: Math.round((drainedAtMs - lastFaultEndMs) / 100) / 10,
      drained,
      seed,
      settings: {
        partitions,
        workers: 2,
        ingesters: ingesterNames.length,
        answer_to_completion_ms: ANSWER_TO_COMPLETION_MS,
        api_unavailable_share: unavailable,
        api_drop_share: drop,
        fault_gap_ms: gap,
        down_ms: down,
        publish_seconds: opts.publishSeconds,
        relay_env: opts.env ?? {},
      },
    };
  } finally {
    await connection?.close().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await Promise.all(Object.values(relay).map((p) => p?.stop()));
    await api.close();
  }
}
