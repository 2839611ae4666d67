/**
 * The soak's overlapping faults, each one step of the fault controller (faults.ts): the Temporal server down
 * while a Kafka broker is killed and restarted; a rebalance (an ingester killed and started again, then its old
 * member evicted) while Temporal is down; the DLQ topic refusing writes while dispatches reach the end of their
 * retry budget and must be dead-lettered (the budget lane: dispatches the runs API always answers 503, on a
 * tenant of their own whose ingester gives them a short budget).
 */
import type { Kafka } from 'kafkajs';
import { topics } from 'poimen-relay/internal/contract/index';
import type { RunsApiDouble } from '#devstack/runsApiDouble';
import type { ServerFaults } from './servers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const COMBINED_FAULTS = ['temporal+kafka', 'temporal+rebalance', 'dlq+budget'] as const;
export type CombinedFault = (typeof COMBINED_FAULTS)[number];

/** The lane of dispatches that must fail: their own tenant, ingester and (short) retry budget. */
export interface BudgetLane {
  tenant: string;
  groupId: string;
  run: string;
  budgetMs: number;
  /** The doomed dispatch keys published so far. */
  keys: string[];
}

export const DOOMED_PREFIX = 'chaos-doomed-';
/** Doomed dispatches published per DLQ fault: one per partition of a four-partition topic, on average. */
const DOOMED_PER_FAULT = 4;
/** The workflow writes its dead letter this long after the budget's end (workflows/index.ts). */
const DEAD_LETTER_AFTER_BUDGET_MS = 1_000;

export interface CombinedContext {
  kafka: Kafka;
  servers: ServerFaults;
  api: RunsApiDouble;
  lane: BudgetLane;
  /** Kills one ingester of the group; the answer starts it again and resolves once it is ready. */
  killIngester(): Promise<() => Promise<void>>;
  /** Kills one Kafka broker, keeps it down for `downMs`, restarts it and waits until it is back. */
  hitKafka(downMs: number): Promise<void>;
  /** How long a killed member takes to leave the group (session timeout) and the group to settle. */
  settleMs: number;
  downMs: number;
  say: (m: string) => void;
}

export interface CombinedOutcome {
  /** When Temporal went down and came back, for the 409 account's fault windows. */
  temporalDown?: { fromMs: number; toMs: number };
  kafkaKills: number;
  ingesterKills: number;
  /** The DLQ fault: when writes were refused, and the budget ends of its doomed dispatches. */
  dlqFault?: { fromMs: number; toMs: number; deadLetterDueMs: number[] };
}

/** One overlapping fault; what it did, for the soak's account. */
export async function combinedFault(kind: CombinedFault, ctx: CombinedContext): Promise<CombinedOutcome> {
  if (kind === 'dlq+budget') return dlqDuringBudgetEnd(ctx);
  const fromMs = Date.now();
  const restartTemporal = await ctx.servers.temporalDown();
  // An ingester started while Temporal is away waits for it (not ready): it is spawned during the outage and
  // awaited after.
  let starting: Promise<void> | undefined;
  let toMs: number;
  try {
    // Let the ingesters see the outage (their starts fail and their partitions pause) before the second fault.
    await sleep(2_000);
    if (kind === 'temporal+kafka') {
      ctx.say('  … while Temporal is down');
      await ctx.hitKafka(ctx.downMs);
    } else {
      ctx.say('  … a rebalance while Temporal is down');
      const startAgain = await ctx.killIngester();
      // The killed member's session expires and its partitions move to the others, within the outage.
      await sleep(ctx.settleMs);
      starting = startAgain();
      starting.catch(() => undefined);
      // The new member asks to join while Temporal is still away: a second rebalance.
      await sleep(3_000);
    }
  } finally {
    await restartTemporal();
    toMs = Date.now();
    await starting;
  }
  return {
    kafkaKills: kind === 'temporal+kafka' ? 1 : 0,
    ingesterKills: kind === 'temporal+rebalance' ? 1 : 0,
    temporalDown: { fromMs, toMs },
  };
}

/**
 * Publishes a few doomed dispatches, waits for their first call, and refuses writes to their DLQ topic from
 * shortly before the first budget ends until a few seconds after the last one's dead letter is due.
 */
async function dlqDuringBudgetEnd(ctx: CombinedContext): Promise<CombinedOutcome> {
  const { lane, api } = ctx;
  const keys = Array.from(
    { length: DOOMED_PER_FAULT },
    (_, i) => `${DOOMED_PREFIX}${lane.run}-${lane.keys.length + i}`,
  );
  lane.keys.push(...keys);
  await publishDoomed(ctx.kafka, lane.tenant, keys);
  const firstCalls = await firstCallsOf(api, keys, 120_000);
  const due = keys.flatMap((k) => {
    const at = firstCalls.get(k);
    return at === undefined ? [] : [at + lane.budgetMs + DEAD_LETTER_AFTER_BUDGET_MS];
  });
  if (due.length === 0) {
    ctx.say('  doomed dispatches not called within 2 min; DLQ fault skipped');
    return { kafkaKills: 0, ingesterKills: 0 };
  }
  await sleep(Math.max(0, Math.min(...due) - 2_500 - Date.now()));
  ctx.say(`  DLQ refuses writes while ${keys.length} doomed dispatches reach their budget's end`);
  const fromMs = Date.now();
  const restore = await ctx.servers.refuseDlq(topics.dlq(lane.tenant));
  try {
    await sleep(Math.max(0, Math.max(...due) + ctx.downMs - Date.now()));
  } finally {
    await restore();
  }
  return {
    kafkaKills: 1,
    ingesterKills: 0,
    dlqFault: { fromMs, toMs: Date.now(), deadLetterDueMs: due },
  };
}

async function publishDoomed(kafka: Kafka, tenant: string, keys: string[]): Promise<void> {
  const producer = kafka.producer({ retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 3000 } });
  await producer.connect();
  try {
    await producer.send({
      topic: topics.dispatch(tenant),
      acks: -1,
      messages: keys.map((k) => ({
        key: `${tenant}:${k}`,
        value: JSON.stringify({
          workflow_ref: 'chaos@v1',
          input: { doomed: true },
          goal_id: null,
          dispatch_key: k,
        }),
      })),
    });
  } finally {
    await producer.disconnect().catch(() => undefined);
  }
}

/** The time of each key's first call at the API, waiting up to `timeoutMs` for all of them. */
async function firstCallsOf(
  api: RunsApiDouble,
  keys: string[],
  timeoutMs: number,
): Promise<Map<string, number>> {
  const want = new Set(keys);
  const seen = new Map<string, number>();
  const deadline = Date.now() + timeoutMs;
  let scanned = 0;
  while (seen.size < want.size && Date.now() < deadline) {
    const reqs = api.requests;
    for (; scanned < reqs.length; scanned++) {
      const r = reqs[scanned]!;
      const k = (r.json as { dispatch_key?: string } | undefined)?.dispatch_key;
      if (k !== undefined && want.has(k) && !seen.has(k)) seen.set(k, r.receivedAtMs);
    }
    if (seen.size < want.size) await sleep(200);
  }
  return seen;
}

/** Dead letters due while the DLQ refused writes: each must still be written, once, when it accepts them again. */
export function dueDuringDlqFault(fault: {
  fromMs: number;
  toMs: number;
  deadLetterDueMs: number[];
}): number {
  return fault.deadLetterDueMs.filter((t) => t >= fault.fromMs && t <= fault.toMs).length;
}
