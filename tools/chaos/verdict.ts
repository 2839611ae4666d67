/**
 * The verdict: waits for the drain, then checks the relay's promise against the API double's wire, Kafka (dead
 * letters, the group's offsets) and Temporal (executions), never against the relay's own metrics or logs.
 */
import type { Client } from '@temporalio/client';
import { topics, workflowId } from 'poimen-relay/internal/contract/index';
import { readDeadLetters } from 'poimen-relay/internal/kafka/dlqReader';
import { poll } from 'poimen-relay/internal/poll';
import type { RunsApiDouble } from '#devstack/runsApiDouble';
import { committedAtLogEnd } from '../bench/groupOffsets';
import { type AttemptTimeout, dedupAccount, dlqAccount, sourcesWithTwoIds } from './account';
import type { FaultLog } from './faults';
import type { Planned } from './traffic';
import type { SoakResult, SoakRun } from './types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What was published that the verdict holds the relay to. */
export interface Expected {
  records: Planned[];
  validKeys: Set<string>;
  bad: Planned[];
}

/** A dead letter as the verdict reads it; fields of a record that does not parse are left empty. */
export type SeenDlq = {
  id: string;
  partition: number;
  offset: number;
  key: string;
  type: string;
  error: string;
  payload: string;
  dispatchKey: string | null;
};

// The DLQ is read once the faults are over, whole, by a throwaway group that commits nothing: a consumer
// left running through broker kills would restart itself in the background, past the end of the soak.
export async function readDlq({ kafka, tenant, run }: SoakRun): Promise<SeenDlq[]> {
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
}

/** Records on the dispatch topic not yet committed by the relay's group. */
export async function lagOf({ kafka, tenant, groupId }: SoakRun): Promise<number> {
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
}

/**
 * Members of the relay's group once the soak is over, waiting up to `graceMs` for `expected` (a restarted ingester
 * takes a moment to join). A running ingester that is not a member consumes nothing it may commit.
 */
export async function groupMembersOf(
  { kafka, groupId }: SoakRun,
  expected: number,
  graceMs = 60_000,
): Promise<number> {
  const members = async () => {
    const a = kafka.admin();
    try {
      await a.connect();
      const { groups } = await a.describeGroups([groupId]);
      return groups[0]?.members.length ?? 0;
    } finally {
      await a.disconnect().catch(() => undefined);
    }
  };
  const got = await poll(async () => (await members()) === expected, {
    timeoutMs: graceMs,
    intervalMs: 1000,
    retryErrors: true,
  });
  return got.done ? expected : await members().catch(() => -1);
}

/** Malformed records with a dead letter that carries their marker. */
function matched(dlqSeen: SeenDlq[], bad: Planned[]): number {
  const payloads = dlqSeen.map((d) => `${d.key}\u0000${d.payload}`);
  return bad.filter((b) => payloads.some((p) => p.includes(b.marker!))).length;
}

const running = async (client: Client, taskQueue: string) =>
  (await client.workflow.count(`TaskQueue="${taskQueue}" AND ExecutionStatus="Running"`)).count;

/**
 * Drained: every valid key has a run, every malformed record its DLQ record, nothing Running, no lag. A soak
 * that does not drain in time ends with what was seen by then.
 */
export async function awaitDrain(
  soak: SoakRun,
  client: Client,
  api: RunsApiDouble,
  { validKeys, bad }: Expected,
  drainTimeoutMs: number,
  alsoDone: () => Promise<boolean> = async () => true,
): Promise<{ drained: boolean; drainedAtMs: number; dlqSeen: SeenDlq[] }> {
  const { taskQueue } = soak;
  let dlqSeen: SeenDlq[] = [];
  let drained = false;
  let drainedAtMs = Date.now();
  const deadline = Date.now() + drainTimeoutMs;
  while (Date.now() < deadline) {
    const runsDone = [...validKeys].every((k) => api.runs.has(k));
    if (runsDone) dlqSeen = await readDlq(soak).catch(() => dlqSeen);
    if (runsDone && matched(dlqSeen, bad) === bad.length) {
      const [r, lag] = await Promise.all([
        running(client, taskQueue).catch(() => -1),
        lagOf(soak).catch(() => -1),
      ]);
      if (r === 0 && lag === 0 && (await alsoDone())) {
        drained = true;
        drainedAtMs = Date.now();
        break;
      }
    }
    await sleep(500);
  }
  if (!drained) drainedAtMs = Date.now();
  return { drained, drainedAtMs, dlqSeen };
}

/** Workflow ids with more than one execution of any status. */
async function duplicateExecutionsOf(client: Client, { tenant, taskQueue }: SoakRun, validKeys: Set<string>) {
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
  return [...executionsPerId.values()].filter((c) => c > 1).length;
}

export type Verdict = Omit<
  SoakResult,
  | 'profile'
  | 'ingesters'
  | 'workers'
  | 'group_members'
  | 'cluster_faults'
  | 'combined_faults'
  | 'budget_lane'
  | 'not_ready'
  | 'publish_s'
  | 'fault_window_s'
  | 'drain_after_last_fault_s'
  | 'drained'
  | 'seed'
  | 'settings'
>;

/** The final account, from the API's wire, Kafka and Temporal. */
export async function account(
  soak: SoakRun,
  client: Client,
  api: RunsApiDouble,
  { records, validKeys, bad }: Expected,
  droppedAfterAdmit: Map<string, number>,
  { kills, faultWindows, pendingRewinds }: FaultLog,
  drain: { drained: boolean; dlqSeen: SeenDlq[] },
  timeouts: AttemptTimeout[],
): Promise<Verdict> {
  const { kafka, tenant, groupId, taskQueue } = soak;
  let dlqSeen = drain.dlqSeen;
  if (!drain.drained) dlqSeen = await readDlq(soak).catch(() => dlqSeen);
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
  const duplicateExecutions = await duplicateExecutionsOf(client, soak, validKeys);
  const atLogEnd = await committedAtLogEnd(kafka, groupId, [topics.dispatch(tenant)], 30_000);
  const dedupAcc = dedupAccount(
    api.requests.map((r) => ({
      dispatchKey: (r.json as { dispatch_key?: string } | undefined)?.dispatch_key,
      answer: r.answer,
      receivedAtMs: r.receivedAtMs,
    })),
    droppedAfterAdmit,
    faultWindows,
    timeouts,
  );
  const dlqAcc = dlqAccount(
    dlqSeen.filter((d) => d.id !== ''),
    (await Promise.all(pendingRewinds)).flat(),
  );
  const executionsRunning = await running(client, taskQueue).catch(() => -1);
  const lag = await lagOf(soak).catch(() => -1);
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
    dlq_malformed_matched: matched(dlqSeen, bad),
    dlq_unexpected: unexpected,
    dlq_without_reason: withoutReason,
    dedup: dedupAcc,
    dlq_account: dlqAcc,
    dlq_sources_with_two_ids: sourcesWithTwoIds(dlqSeen.filter((d) => d.id !== '')),
    executions_running: executionsRunning,
    consumer_group_lag: lag,
    committed_at_log_end: atLogEnd,
    kills,
    api: { requests: api.requests.length, unavailable_503: unavailable503, dropped, dedup_409: dedup },
    posts_per_valid_dispatch: Math.round((validPosts / Math.max(1, validKeys.size)) * 100) / 100,
  };
}
