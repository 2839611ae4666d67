/**
 * The cost of a dispatch around a bench window, from real data: the histories of a sample of the window's
 * executions (events and Temporal Cloud actions, counted by historyCost.ts), the server's own `action` counter
 * (activity heartbeats are billed too but are in no history), and on the cluster profile what
 * PostgreSQL committed and wrote (pgCost.ts).
 */
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { waitUntil } from 'poimen-relay/internal/poll';
import { type HistoryCost, historyCost, summarize } from './historyCost';
import { mapLimit, round } from './measure';
import { type PgCounters, pgCostPerDispatch, pgRate } from './pgCost';
import type { BenchTarget } from './rig';

/** Histories read per window: counts do not vary between dispatches of one path, so a sample tells them. */
export const HISTORY_SAMPLE = 50;
/** PostgreSQL publishes a backend's counters at the latest about 10 s after its last transaction. */
const PG_SETTLE_MS = 11_000;
/** Seconds the counters are read with nothing to do, after the window: PostgreSQL's idle rate. */
const PG_IDLE_S = 10;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** k items spread evenly over the list (all of it when it is no longer than k). */
export function sampleEvenly<T>(xs: readonly T[], k: number): T[] {
  if (xs.length <= k) return [...xs];
  return Array.from({ length: k }, (_, i) => xs[Math.floor((i * xs.length) / k)]!);
}

/** A counter's series with the label `filter`, summed by the value of label `by`. */
export function counterBy(
  metricsText: string,
  metric: string,
  filter: string,
  by: string,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${metric}{`) || !line.includes(filter)) continue;
    const key = new RegExp(`[{,]${by}="([^"]*)"`).exec(line)?.[1];
    const value = Number(
      line
        .slice(line.lastIndexOf('}') + 1)
        .trim()
        .split(/\s+/)[0],
    );
    if (key !== undefined && Number.isFinite(value)) out[key] = (out[key] ?? 0) + value;
  }
  return out;
}

/** The server's own `action` counter of the namespace, by action_type (what it meters as an action). */
type ServerCounts = Record<string, number>;

/** What the server has counted so far; undefined when it has no metrics endpoint. */
async function serverCounts(t: BenchTarget): Promise<ServerCounts | undefined> {
  if (!t.metricsUrl) return undefined;
  const res = await fetch(t.metricsUrl);
  if (!res.ok) throw new Error(`bench: ${t.metricsUrl} answered ${res.status}`);
  return counterBy(await res.text(), 'action', `namespace="${t.namespace}"`, 'action_type');
}

/** Per dispatch between two readings, by action type; types that did not move are left out. */
export function actionsPerDispatch(
  before: Record<string, number>,
  after: Record<string, number>,
  dispatches: number,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]): [string, number] => [k, round((v - (before[k] ?? 0)) / dispatches, 3)])
      .filter(([, v]) => v !== 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

/** Waits until visibility shows no running execution on the task queue, i.e. every closing task is done. */
async function allClosed(client: Client, taskQueue: string, timeoutMs: number): Promise<void> {
  const query = `TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`;
  let running = -1;
  const done = await waitUntil(
    async () => {
      running = (await client.workflow.count(query)).count;
      return running === 0;
    },
    timeoutMs,
    1000,
  );
  if (!done) throw new Error(`bench: ${running} executions still running on ${taskQueue}`);
}

/** The histories of the given executions, counted; read 8 at a time. */
export async function fetchCosts(client: Client, workflowIds: string[]): Promise<HistoryCost[]> {
  const costs: HistoryCost[] = [];
  await mapLimit(workflowIds, 8, async (id) => {
    const history = await client.workflow.getHandle(id).fetchHistory();
    costs.push(historyCost(JSON.parse(historyToJSON(history))));
  });
  return costs;
}

export interface CostWindow {
  /**
   * Waits for the window's executions to close, then reads what they cost: `sample` are the workflow ids whose
   * histories are counted, `dispatches` how many the window ran. Returns the figures and the counted histories.
   */
  close(o: {
    taskQueue: string;
    sample: string[];
    dispatches: number;
  }): Promise<{ figures: DispatchCost; costs: HistoryCost[] }>;
}

export interface DispatchCost {
  temporal: ReturnType<typeof summarize>;
  /**
   * The server's `action` counter per dispatch over the window, by type: what no history shows (heartbeats,
   * grpc_RecordActivityTaskHeartbeat, each billed on Cloud; retried attempts of executions outside the sample),
   * and a cross-check of the history count.
   */
  server_actions_per_dispatch: Record<string, number> | null;
  postgres?: {
    per_dispatch: ReturnType<typeof pgCostPerDispatch>;
    above_idle: ReturnType<typeof pgCostPerDispatch>;
    window_s: number;
    idle_xact_per_s: Record<string, number>;
  };
}

/** Opens the window: reads the server's heartbeat count and, on the cluster, PostgreSQL's counters. */
export async function openCostWindow(t: BenchTarget): Promise<CostWindow> {
  const server0 = await serverCounts(t);
  const pg0 = t.pgCounters?.();
  const from = Date.now();
  return {
    async close({ taskQueue, sample, dispatches }) {
      const connection = await Connection.connect({ address: t.temporalAddress });
      const client = new Client({ connection, namespace: t.namespace });
      try {
        await allClosed(client, taskQueue, 10 * 60_000);
        const server1 = await serverCounts(t);
        let postgres: DispatchCost['postgres'];
        if (pg0 && t.pgCounters) {
          // Before any history is read: those reads are transactions too.
          await sleep(PG_SETTLE_MS);
          const pg1 = t.pgCounters();
          const windowS = (Date.now() - from) / 1000;
          await sleep(PG_IDLE_S * 1000);
          const idle = pgRate(pg1, t.pgCounters(), PG_IDLE_S);
          postgres = {
            per_dispatch: pgCostPerDispatch(pg0, pg1, dispatches),
            above_idle: pgCostPerDispatch(pg0, pg1, dispatches, { perS: idle, windowS }),
            window_s: round(windowS),
            idle_xact_per_s: Object.fromEntries(
              Object.entries(idle).map(([db, c]) => [db, round(c.xact_commit)]),
            ),
          };
        }
        const costs = await fetchCosts(client, sample);
        const figures: DispatchCost = {
          temporal: summarize(costs),
          server_actions_per_dispatch:
            server0 && server1 ? actionsPerDispatch(server0, server1, dispatches) : null,
          ...(postgres ? { postgres } : {}),
        };
        return { figures, costs };
      } finally {
        await connection.close();
      }
    },
  };
}

/** The one-line summary of the printed table. */
export function costRow(c: DispatchCost): string {
  const pg = c.postgres
    ? Object.entries(c.postgres.per_dispatch)
        .map(
          ([db, x]) =>
            `; ${db}: ${x.xact_commit} xact, ${x.rows_inserted}/${x.rows_updated}/${x.rows_deleted} rows ins/upd/del`,
        )
        .join('')
    : '';
  const server = c.server_actions_per_dispatch;
  const metered = server
    ? `; server's action counter ${round(
        Object.values(server).reduce((a, b) => a + b, 0),
        3,
      )}, of which heartbeats ${server.grpc_RecordActivityTaskHeartbeat ?? 0}`
    : '';
  return `${c.temporal.events_per_dispatch} events, ${c.temporal.actions_per_dispatch} actions by Cloud's rules (${c.temporal.executions} histories)${metered}${pg}`;
}

export type { PgCounters };
