/**
 * A fake ListWorkflowExecutions for the unit tests of src/temporal/visibilityCloses.ts: closed runs by workflow id,
 * every query recorded, and how many ran at once; it can fail or be slow. `setup` builds a VisibilityCloses on it
 * with a recording per-execution watch, a counter, a logger and a clock the test moves.
 */
import { setMaxListeners } from 'node:events';
import { Counter, Registry } from 'prom-client';
import type { ClosedPage } from '../../src/temporal/closedRuns';
import { VisibilityCloses, type VisibilityClosesOptions } from '../../src/temporal/visibilityCloses';

export const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));
/** The promise's value, or 'still waiting' after `ms`. */
export const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, tick(ms).then(() => 'still waiting' as const)]);
export const grpcError = (code: number) =>
  Object.assign(new Error(`code ${code}`), { code, details: `code ${code}` });

/** A fake List: closed runs by workflow id; records every query and how many ran at once; can fail or be slow. */
export function visibility() {
  const closed = new Map<string, string[]>();
  const queries: string[] = [];
  let inFlight = 0;
  const v = {
    fail: undefined as Error | undefined,
    delayMs: 0,
    maxInFlight: 0,
    queries,
    list: jest.fn(async (query: string): Promise<ClosedPage> => {
      queries.push(query);
      v.maxInFlight = Math.max(v.maxInFlight, ++inFlight);
      try {
        if (v.delayMs) await tick(v.delayMs);
        if (v.fail) throw v.fail;
        const ids = [...query.matchAll(/WorkflowId IN \(([^)]*)\)/g)][0]![1]!
          .split(', ')
          .map((q) => q.slice(1, -1));
        return {
          executions: ids.flatMap((workflowId) =>
            (closed.get(workflowId) ?? []).map((runId) => ({ workflowId, runId })),
          ),
        };
      } finally {
        inFlight--;
      }
    }),
    close: (workflowId: string, runId: string) =>
      closed.set(workflowId, [...(closed.get(workflowId) ?? []), runId]),
  };
  return v;
}

export function setup(extra: Partial<VisibilityClosesOptions> = {}) {
  const v = visibility();
  const clock = { t: 0 };
  const watchOne = jest.fn(async (_id: string, _run: string, _signal: AbortSignal) => true);
  const registry = new Registry();
  const seen = new Counter({ name: 'seen', help: 'h', labelNames: ['via'], registers: [registry] });
  const warn = jest.fn();
  const info = jest.fn();
  const closes = new VisibilityCloses({
    list: v.list,
    watchOne,
    seen,
    logger: { warn, info, error: jest.fn() } as never,
    intervalMs: 10,
    handOverMs: 1000,
    now: () => clock.t,
    ...extra,
  });
  const counts = async () =>
    Object.fromEntries((await seen.get()).values.map((x) => [x.labels.via as string, x.value]));
  const signal = new AbortController().signal;
  setMaxListeners(0, signal);
  return { v, closes, watchOne, clock, counts, warn, info, signal };
}
