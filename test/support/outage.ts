/**
 * Shared pieces of the runs-API outage suites: many dispatches at once, the documented bound on calls
 * during an outage, what the API saw per dispatch, and its rate over sliding windows.
 */
import type { RelayProcess } from '../../devstack/relayProcess';
import { topics } from '../../src/contract';
import type { Harness } from './relayHarness';
import type { RunsApiDouble } from '../../devstack/runsApiDouble';

/** Outage-suite env every scenario shares: no attempt cap, so only the time budget ends a dispatch. */
export const UNCAPPED = { RETRY_MAX_ATTEMPTS: '0' } as const;

/** `n` fresh dispatch keys. */
export function dispatchKeys(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
}

/** Publishes one dispatch per key to the harness tenant's dispatch topic, in one batch, acked by all replicas. */
export async function publishDispatches(h: Harness, keys: string[]): Promise<void> {
  await h.producer.send({
    topic: topics.dispatch(h.tenant),
    acks: -1,
    messages: keys.map((key) => ({ key, value: h.dispatchValue(key) })),
  });
}

/**
 * The outage itself, the one timed thing in these suites (it is the scenario): resolves when `endsAtMs` (epoch
 * ms) is reached.
 */
export async function outageUntil(endsAtMs: number): Promise<void> {
  const left = endsAtMs - Date.now();
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
}

export interface BreakerSettings {
  /** Worker processes polling the task queue. */
  workers: number;
  /** POIMEN_BREAKER_FAILURES. */
  failures: number;
  /** POIMEN_BREAKER_PROBE_INTERVAL_MS. */
  probeIntervalMs: number;
  /** POIMEN_RUNS_API_CONNECTIONS. */
  connections: number;
  /** POIMEN_WORKER_MAX_ACTIVITIES. */
  maxActivities: number;
}

/** The settings as worker env, so the bound below is computed from exactly what the workers run with. */
export function breakerEnv(s: BreakerSettings): Record<string, string> {
  return {
    POIMEN_BREAKER_FAILURES: String(s.failures),
    POIMEN_BREAKER_PROBE_INTERVAL_MS: String(s.probeIntervalMs),
    POIMEN_RUNS_API_CONNECTIONS: String(s.connections),
    POIMEN_WORKER_MAX_ACTIVITIES: String(s.maxActivities),
  };
}

/**
 * docs/design.md's bound on API calls during an outage of `outageMs`: per worker F + C + ceil(T / P) + 1, where C
 * (calls admitted before the breaker opened) is at most the activity slots: calls admitted beyond the connection
 * pool wait in it and still go out. The suites send no input over 32 KiB, so the large-input queue's slots add none.
 */
export function callBound(s: BreakerSettings, outageMs: number): number {
  const inFlight = s.maxActivities;
  return s.workers * (s.failures + inFlight + Math.ceil(outageMs / s.probeIntervalMs) + 1);
}

/**
 * Calls a worker made that failed (any `code` of poimen_runs_api_requests_total but 2xx and 409): when the API
 * refuses connections, the double never sees them, so they are counted where they were made.
 */
export async function failedCalls(worker: RelayProcess): Promise<number> {
  let sum = 0;
  for (const line of (await worker.metrics()).split('\n')) {
    const m = /^poimen_runs_api_requests_total\{code="([^"]*)"\}\s+(\S+)/.exec(line);
    if (m && !/^(2\d\d|409)$/.test(m[1]!)) sum += Number(m[2]);
  }
  return sum;
}

/** poimen_runs_api_circuit_state of a worker: 0 closed, 1 open, 2 half-open (undefined before it is exported). */
export async function circuitState(worker: RelayProcess): Promise<number | undefined> {
  const m = /^poimen_runs_api_circuit_state\s+(\S+)/m.exec(await worker.metrics());
  return m ? Number(m[1]) : undefined;
}

/**
 * Every key has a run and was admitted with 201 exactly once; nothing else was created. Returns the 409 count
 * (a retry of a call whose answer was lost: harmless, but worth printing).
 */
export function expectEachCreatedOnce(api: RunsApiDouble, keys: string[]): { conflicts: number } {
  const created = new Map<string, number>();
  let conflicts = 0;
  for (const r of api.requests) {
    const key = (r.json as { dispatch_key?: string } | undefined)?.dispatch_key ?? '';
    if (r.answer === 201) created.set(key, (created.get(key) ?? 0) + 1);
    if (r.answer === 409) conflicts++;
  }
  expect([...api.runs.keys()].sort()).toEqual([...keys].sort());
  expect([...created.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  expect(created.size).toBe(keys.length);
  return { conflicts };
}

/** The most requests received in any window of `windowMs` (each window starting at a request), and where. */
export function maxInWindow(times: number[], windowMs = 1000): { max: number; startMs: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let best = { max: 0, startMs: sorted[0] ?? 0 };
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + windowMs) end++;
    if (end - start > best.max) best = { max: end - start, startMs: sorted[start]! };
  }
  return best;
}

/** Runs `fn` over `items` with at most `limit` at once (describing hundreds of executions without a stampede). */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * Runs independent scenarios at once inside one jest test, and fails naming each scenario that failed. Not
 * `test.concurrent`: jest leaves "test code" as soon as any concurrent test ends, and a module the others then
 * load lazily (kafkajs loads its protocol requests on first use) throws "outside of the scope of the test code".
 */
export async function runAtOnce(scenarios: Record<string, () => Promise<void>>): Promise<void> {
  const names = Object.keys(scenarios);
  const results = await Promise.allSettled(names.map((name) => scenarios[name]!()));
  const failed = results.flatMap((r, i) =>
    r.status === 'rejected' ? [{ name: names[i]!, err: r.reason }] : [],
  );
  if (failed.length === 0) return;
  const only = failed.length === 1 ? failed[0]! : undefined;
  if (only?.err instanceof Error) {
    // Named in the message and in the stack (jest prints the stack, with the failing line's code frame).
    only.err.stack = `${only.name}: ${only.err.stack ?? ''}`;
    only.err.message = `${only.name}: ${only.err.message}`;
    throw only.err;
  }
  throw new Error(
    failed
      .map(({ name, err }) => `${name}: ${err instanceof Error ? err.message : String(err)}`)
      .join('\n\n'),
  );
}
