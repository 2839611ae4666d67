/* eslint-disable max-lines -- the cluster suite's topology and its end-of-run account together */
/**
 * The production shape the cluster suite runs the relay in: 20 tenants with 4 partitions each (replicated 3
 * ways, min ISR 2: the topics' own policy on three brokers), two ingesters and two workers as real processes,
 * a stream of dispatches across every tenant while nodes die, and the end-of-run account: every dispatch made
 * exactly one run, Temporal holds exactly one execution per dispatch, the group committed to the log end.
 */
import { loadStackConfig } from '../../../devstack/config';
import { topics } from '../../../src/contract';
import { ClusterStack, KAFKA_NODES } from '../../../devstack/stack/clusterStack';
import { waitForDeadLetters } from '../../support/dlqTopic';
import { type Harness, createHarness } from '../../support/relayHarness';
import type { RelayProcess } from '../../support/relay';
import { waitFor } from '../../support/wait';

export const TENANTS = 20;
export const PARTITIONS = 4;

export type KafkaNode = (typeof KAFKA_NODES)[number];

/** Harnesses whose streams must stop publishing (their topology is being cleaned up). */
const cancelled = new WeakSet<Harness>();

/** Every key published through a harness so far: its task queue holds one execution for each. */
const publishedKeys = new Map<Harness, Set<string>>();

export function clusterStack(): ClusterStack {
  if (process.env.POIMEN_TEST_STACK_PROFILE !== 'cluster') {
    throw new Error(
      'the cluster suite runs through npm run test:cluster (its global setup starts the cluster)',
    );
  }
  return new ClusterStack(loadStackConfig());
}

export interface Topology {
  h: Harness;
  ingesters: RelayProcess[];
  workers: RelayProcess[];
  cleanup(): Promise<void>;
}

export async function startTopology(
  opts: { ingesters?: number; workers?: number; env?: Record<string, string> } = {},
): Promise<Topology> {
  const h = await createHarness({
    tenants: TENANTS,
    partitions: PARTITIONS,
    env: {
      // Outages here last tens of seconds (a Temporal or PostgreSQL restart): a budget that outlives them.
      RETRY_MAX_ATTEMPTS: '0',
      RETRY_MAX_DURATION_MS: '600000',
      RETRY_MAX_INTERVAL_MS: '2000',
      ...opts.env,
    },
  });
  const ingesters: RelayProcess[] = [];
  const workers: RelayProcess[] = [];
  // The workers first, side by side, then the ingesters side by side: both join the group within its 3 s delay.
  const n = (count: number | undefined) => Array.from({ length: count ?? 2 }, (_, i) => i);
  workers.push(...(await Promise.all(n(opts.workers).map((i) => h.startWorker(`worker-${i}`)))));
  ingesters.push(...(await Promise.all(n(opts.ingesters).map((i) => h.startIngester(`ingest-${i}`)))));
  return {
    h,
    ingesters,
    workers,
    async cleanup() {
      // A test that failed mid-stream leaves its publisher running: stop it before the producer goes.
      cancelled.add(h);
      await h.cleanup();
      // 60 topics of 4 partitions per file: left on a developer's persistent cluster, every later broker restart
      // would recover their logs too.
      const admin = h.kafka.admin();
      await admin.connect();
      try {
        const names = h.tenants.flatMap((x) => [topics.dispatch(x), topics.events(x), topics.dlq(x)]);
        await admin.deleteTopics({ topics: names, timeout: 60_000 }).catch(() => undefined);
      } finally {
        await admin.disconnect();
      }
    },
  };
}

/**
 * A stream of dispatches, round-robin over every tenant, in batches every 100 ms (or one per tick below 10/s),
 * until `stop()` (bounded by `max`): faults land while it runs, however long a node takes to come back.
 */
export interface Stream {
  /** The keys published so far (acks=-1: each is on two replicas at least). */
  keys: string[];
  published(): number;
  /** Still publishing: a fault injected now is mid-stream. */
  running(): boolean;
  /**
   * Publishes at this rate from the next tick on. A test slows the stream while a node comes back: it stays
   * mid-stream, and the relay does not face a backlog of every second a restart took (at 20/s a minute's restart
   * left ~1,200 dispatches to drain after it).
   */
  pace(perSecond: number): void;
  /** Stops after the batch in flight; resolves with every key published. */
  stop(): Promise<string[]>;
}

export function streamDispatches(h: Harness, label: string, perSecond = 20, max = 4000): Stream {
  const keys: string[] = [];
  const all = publishedKeys.get(h) ?? new Set<string>();
  publishedKeys.set(h, all);
  let stopping = false;
  let rate = perSecond;
  const done = (async () => {
    while (!stopping && keys.length < max && !cancelled.has(h)) {
      const tickStarted = Date.now();
      const tickMs = Math.max(100, 1000 / rate);
      const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
      const batch = Array.from(
        { length: perTick },
        (_, i) => `${label}-${String(keys.length + i).padStart(5, '0')}`,
      );
      // One record per send, only failed ones sent again: kafkajs can resolve a send spanning several brokers
      // without the partition whose leader just moved (kafkajs #1303), which would read as a lost dispatch.
      await Promise.all(
        batch.map((key, i) =>
          waitFor(
            () =>
              cancelled.has(h) ||
              h.producer
                .send({
                  topic: topics.dispatch(h.tenants[(keys.length + i) % h.tenants.length] as string),
                  acks: -1,
                  messages: [{ key, value: h.dispatchValue(key) }],
                })
                .then(() => true),
            { timeoutMs: 180_000, intervalMs: 500, what: `${key} published` },
          ),
        ),
      );
      batch.forEach((k) => {
        keys.push(k);
        all.add(k);
      });
      const rest = tickMs - (Date.now() - tickStarted);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    }
  })();
  // Kept for stop(): an error surfaces there, never as an unhandled rejection.
  done.catch(() => undefined);
  return {
    keys,
    published: () => keys.length,
    running: () => !stopping && keys.length < max,
    pace(n: number) {
      if (!(n > 0)) throw new Error(`a stream's rate must be above 0, got ${n}`);
      rate = n;
    },
    async stop() {
      stopping = true;
      await done;
      return [...keys];
    },
  };
}

/** Resolves once `n` more dispatches have been published: faults land mid-stream, by progress, not by clock. */
export async function afterPublished(stream: Stream, n: number): Promise<void> {
  await waitFor(() => stream.published() >= n, { timeoutMs: 300_000, what: `${n} dispatches published` });
}

/** Injects a fault while the stream runs: asserts the stream is still going, so the fault is mid-stream. */
export async function midStream(stream: Stream, fault: () => Promise<unknown>): Promise<void> {
  expect(stream.running()).toBe(true);
  await fault();
  expect(stream.running()).toBe(true);
}

/** Every node up again, in start order (PostgreSQL before Temporal): a failed test leaves none down. */
export async function restoreCluster(stack: ClusterStack): Promise<void> {
  await stack.startServices(['postgres', ...KAFKA_NODES]);
  await stack.startService('temporal');
}

/**
 * The account of a run: each key made exactly one run at the API (409s allowed: an answer lost in a crash),
 * Temporal holds exactly one execution per key on this task queue, and the group committed to the log end.
 */
export async function expectExactlyOnce(
  t: Topology,
  keys: string[],
  opts: {
    timeoutMs?: number;
    /**
     * Why a call's completion may have been lost outside the API double (a Temporal or PostgreSQL kill): each key
     * may then have one 409, its activity's retry after the API had answered.
     */
    lostCompletions?: string;
  } = {},
): Promise<{ conflicts: number; executions: number }> {
  const { h } = t;
  const timeoutMs = opts.timeoutMs ?? 300_000;
  if (opts.lostCompletions) for (const k of keys) h.allowConflicts(k, 1, opts.lostCompletions);
  await waitFor(() => keys.every((k) => h.api.runs.has(k)), {
    timeoutMs,
    intervalMs: 500,
    what: `${keys.length} runs (have ${keys.filter((k) => h.api.runs.has(k)).length})`,
  });
  await h.expectCommittedAtLogEnd(timeoutMs);
  const conflicts = expectEachCreatedOnce(h, keys);
  // Visibility trails the executions a little: wait for the count to reach every key published on this task
  // queue so far (earlier streams' included), then it must not exceed it.
  const expected = publishedKeys.get(h)?.size ?? keys.length;
  const count = async () => Number((await h.client.workflow.count(`TaskQueue = "${h.taskQueue}"`)).count);
  await waitFor(async () => (await count()) >= expected, {
    timeoutMs: 60_000,
    what: `${expected} executions visible`,
  });
  const executions = await count();
  expect(executions).toBe(expected);
  await expectWholeGroup(t);
  return { conflicts, executions };
}

/**
 * Every running ingester is a member of the group and says it is ready: a member that fell out of its group
 * while its partitions went to the others loses nothing, so only this check sees it.
 */
export async function expectWholeGroup(t: Topology, timeoutMs = 120_000): Promise<void> {
  const admin = t.h.kafka.admin();
  await admin.connect();
  try {
    await waitFor(
      async () => {
        const { groups } = await admin.describeGroups([t.h.groupId]);
        return groups[0]?.state === 'Stable' && groups[0].members.length === t.ingesters.length;
      },
      { timeoutMs, intervalMs: 500, what: `the group stable with ${t.ingesters.length} members` },
    );
  } finally {
    await admin.disconnect();
  }
  for (const ingester of t.ingesters) {
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${ingester.metricsPort}/readyz`)).status === 200,
      { timeoutMs, intervalMs: 500, what: `${ingester.logFile}: /readyz 200` },
    );
  }
}

/**
 * The broker coordinating the group: the leader of its `__consumer_offsets` partition, which Kafka picks as
 * `Utils.abs(groupId.hashCode()) % partitions` (Java's String.hashCode).
 */
export async function groupCoordinator(
  h: Harness,
): Promise<{ partition: number; leader: number; replicas: number[] }> {
  const admin = h.kafka.admin();
  await admin.connect();
  try {
    const { topics: md } = await admin.fetchTopicMetadata({ topics: ['__consumer_offsets'] });
    const parts = md[0]!.partitions;
    let hash = 0;
    for (const ch of h.groupId) hash = (Math.imul(hash, 31) + ch.charCodeAt(0)) | 0;
    // Kafka's Utils.abs: Math.abs, with Integer.MIN_VALUE taken as 0 (not a mask of the sign bit).
    const partition = (hash === -2147483648 ? 0 : Math.abs(hash)) % parts.length;
    const p = parts.find((x) => x.partitionId === partition)!;
    return { partition, leader: p.leader, replicas: p.replicas };
  } finally {
    await admin.disconnect();
  }
}

/**
 * Each key was admitted with 201 exactly once, and nothing was created that no stream published. Returns the
 * 409s among the keys' calls (a retry of a call whose answer a crash lost: harmless, worth printing).
 */
function expectEachCreatedOnce(h: Harness, keys: string[]): number {
  const api = h.api;
  const created = new Map<string, number>();
  let conflicts = 0;
  const ours = new Set(keys);
  for (const r of api.requests) {
    const key = (r.json as { dispatch_key?: string } | undefined)?.dispatch_key ?? '';
    if (!ours.has(key)) continue;
    if (r.answer === 201) created.set(key, (created.get(key) ?? 0) + 1);
    if (r.answer === 409) conflicts++;
  }
  expect(keys.filter((k) => created.get(k) !== 1)).toEqual([]);
  const published = publishedKeys.get(h) ?? new Set<string>();
  expect([...api.runs.keys()].filter((k) => !published.has(k))).toEqual([]);
  return conflicts;
}

/** The node leading partition `partition` of the tenant's dispatch (or DLQ) topic. */
export async function partitionLeader(
  h: Harness,
  tenant: string,
  partition = 0,
  which: 'dispatch' | 'dlq' = 'dispatch',
): Promise<KafkaNode> {
  const admin = h.kafka.admin();
  await admin.connect();
  try {
    // During an election the leader is -1: ask until a node leads.
    return await waitFor(
      async () => {
        const { topics: md } = await admin.fetchTopicMetadata({ topics: [topics[which](tenant)] });
        const leader = `kafka-${md[0]?.partitions.find((p) => p.partitionId === partition)?.leader}`;
        return (KAFKA_NODES as readonly string[]).includes(leader) && (leader as KafkaNode);
      },
      { timeoutMs: 60_000, intervalMs: 500, what: `a leader of ${topics[which](tenant)}/${partition}` },
    );
  } finally {
    await admin.disconnect();
  }
}

/**
 * Waits until every partition of the suite's topics (and the group offsets topic) has all three replicas in
 * sync again: a node just restarted is "ready" before it has caught up, and killing a second node before then
 * would leave partitions below min ISR, a double fault this suite does not claim to ride out.
 */
export async function waitFullIsr(h: Harness, timeoutMs = 120_000): Promise<void> {
  const names = [...h.tenants.flatMap((t) => [topics.dispatch(t), topics.dlq(t)]), '__consumer_offsets'];
  const admin = h.kafka.admin();
  await admin.connect();
  try {
    await waitFor(
      async () => {
        const { topics: md } = await admin.fetchTopicMetadata({ topics: names });
        return md.every((t) => t.partitions.every((p) => p.isr.length === 3));
      },
      { timeoutMs, intervalMs: 500, what: 'every partition back to 3 in-sync replicas' },
    );
  } finally {
    await admin.disconnect();
  }
}

/**
 * Every dead letter on every tenant's DLQ topic, read to the end once at least `expected` are there, through
 * the product's reader (test/support/dlqTopic.ts).
 */
export async function readAllDlq(
  h: Harness,
  expected: number,
  timeoutMs = 120_000,
): Promise<{ tenant: string; key: string; at: string }[]> {
  const letters = await waitForDeadLetters(
    h.kafka,
    h.tenants.map((t) => topics.dlq(t)),
    expected,
    { timeoutMs, what: `${expected} dead letters` },
  );
  return letters.flatMap(({ topic, partition, offset, record }) =>
    record
      ? [{ tenant: record.tenant_id, key: record.dispatch_key ?? '', at: `${topic}/${partition}@${offset}` }]
      : [],
  );
}
