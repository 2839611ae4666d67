/**
 * The retry budget through a runs-API outage, on a shortened time scale (budget 90 s, longest backoff 5 s):
 * an outage shorter than the retry budget dead-letters nothing and the API sees a bounded number of calls
 * while it is down; one longer than the budget dead-letters every dispatch exactly once, at its budget and
 * not before. Real Kafka, real Temporal, the relay's own processes and the runs API double; the scenarios use
 * separate queues and doubles, so they run at once (inside one jest test: see runAtOnce).
 */
import type { Client } from '@temporalio/client';
import { topics } from '../src/contract';
import { type DispatchStatus, dispatchStatus } from '../src/ops/dispatchStatus';
import { idCounts, readTopicToEnd } from './support/dlqTopic';
import {
  type BreakerSettings,
  UNCAPPED,
  breakerEnv,
  callBound,
  circuitState,
  dispatchKeys,
  expectEachCreatedOnce,
  failedCalls,
  mapLimit,
  outageUntil,
  publishDispatches,
  runAtOnce,
} from './support/outage';
import { type RelayProcess, metricSum } from './support/relay';
import { createHarness } from './support/relayHarness';
import type { RunsApiDouble } from '../devstack/runsApiDouble';
import { waitFor } from './support/wait';

const BUDGET_MS = 90_000;
/**
 * Within a lone tenant's bound (POIMEN_INGEST_MAX_OPEN, 256, less the 6 kept for a newcomer): every dispatch is
 * open in Temporal during the outage, as measured here.
 */
const DISPATCHES = 240;
const SHORT_OUTAGE_MS = 45_000;
/**
 * How late a dead letter may be after its first attempt's schedule + budget: the budget's timeout firing, one
 * workflow task and one `deadLetter` activity, for 240 dispatches whose budgets end within seconds of each other
 * on a 2-core machine shared with other suites. Measured: at most 0.9 s and 8.2 s late (two runs).
 */
const DLQ_SLACK_MS = 20_000;
/**
 * How long after the budget the test waits for the last dead letter. The budget runs from each first attempt's
 * schedule, and a loaded worker takes a while over 240 first workflow tasks: measured up to 53 s after the
 * execution's start here (2 cores, load 7-12, three scenarios at once), so the last dead letter came 160 s after
 * the first call.
 */
const MAX_LATE_MS = 150_000;
/** Fewer connections than activity slots, as a worker sized for a slow API would run. */
const BREAKER: BreakerSettings = {
  workers: 1,
  failures: 5,
  probeIntervalMs: 3_000,
  connections: 10,
  maxActivities: 40,
};
const ENV = {
  ...UNCAPPED,
  RETRY_MAX_DURATION_MS: String(BUDGET_MS),
  RETRY_MAX_INTERVAL_MS: '5000',
  ...breakerEnv(BREAKER),
};

interface Outage {
  begin(api: RunsApiDouble): Promise<void>;
  end(api: RunsApiDouble): Promise<void>;
  /** Calls the API got in [fromMs, toMs). */
  calls(api: RunsApiDouble, worker: RelayProcess, fromMs: number, toMs: number): Promise<number>;
}

const answering503: Outage = {
  async begin(api) {
    api.always({ kind: 'status', status: 503 });
  },
  async end(api) {
    api.always(undefined);
  },
  async calls(api, _worker, fromMs, toMs) {
    return api.requests.filter((r) => r.receivedAtMs >= fromMs && r.receivedAtMs < toMs).length;
  },
};

const refusingConnections: Outage = {
  begin: (api) => api.refuseConnections(),
  end: (api) => api.acceptConnections(),
  // The double never sees a refused connect: the worker counts its own failed calls (none fail after recovery).
  calls: (_api, worker) => failedCalls(worker),
};

/** The API down for 45 s: no dead letter, every dispatch created once, calls while down within the bound. */
async function shorterThanBudget(what: string, outage: Outage): Promise<void> {
  const h = await createHarness({ env: ENV });
  try {
    const worker = await h.startWorker();
    await h.startIngester();
    const keys = dispatchKeys('short', DISPATCHES);
    await outage.begin(h.api);
    const downAt = Date.now();
    const upBy = downAt + SHORT_OUTAGE_MS;
    await publishDispatches(h, keys);
    // The scenario holds: all 240 executions started, and the breaker opened, while the API is down.
    await h.expectCommittedAtLogEnd(upBy - Date.now());
    await waitFor(async () => ((await circuitState(worker)) ?? 0) > 0, {
      timeoutMs: upBy - Date.now(),
      what: 'the breaker to open during the outage',
    });
    // `dispatch status` on a dispatch whose attempt waits on the breaker: it says so, and what is left of its budget.
    let waiting: DispatchStatus | undefined;
    await waitFor(
      async () => {
        for (const key of keys.slice(0, 60)) {
          const s = await dispatchStatus(h.client, 'http://ui', h.client.options.namespace, h.tenant, key);
          if (s.waiting_on_breaker) return (waiting = s);
        }
        return undefined;
      },
      {
        timeoutMs: upBy - Date.now(),
        intervalMs: 1_000,
        what: 'dispatch status to show an attempt waiting on the breaker',
      },
    );
    expect(waiting).toMatchObject({ status: 'RUNNING', activity_state: 'STARTED' });
    expect(waiting!.breaker_open_since).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(waiting!.budget_left_s).toBeGreaterThan(0);
    expect(waiting!.budget_left_s).toBeLessThanOrEqual(BUDGET_MS / 1000);
    await outageUntil(upBy);
    const upAt = Date.now();
    await outage.end(h.api);

    await h.api.waitFor((a) => a.runs.size === DISPATCHES, BUDGET_MS, `${DISPATCHES} runs`);
    const lastCreated = Math.max(
      ...h.api.requests.filter((r) => r.answer === 201).map((r) => r.receivedAtMs),
    );
    const { conflicts } = expectEachCreatedOnce(h.api, keys);
    expect(await readTopicToEnd(h.kafka, topics.dlq(h.tenant))).toEqual([]);
    const calls = await outage.calls(h.api, worker, downAt, upAt);
    const bound = callBound(BREAKER, upAt - downAt);
    process.stderr.write(
      `[outage shorter than budget: API ${what}] calls while down ${calls} (bound ${bound}, outage ` +
        `${upAt - downAt} ms); drain after recovery ${lastCreated - upAt} ms; 409s ${conflicts}; ` +
        `requests in all ${h.api.requests.length}\n`,
    );
    expect(calls).toBeLessThanOrEqual(bound);
    await h.expectCommittedAtLogEnd();
  } finally {
    await h.cleanup();
  }
}

/** The API answers 503 past every dispatch's budget: each dead-lettered exactly once, at its budget and not before. */
async function longerThanBudget(): Promise<void> {
  const h = await createHarness({ env: ENV });
  try {
    const worker = await h.startWorker();
    await h.startIngester();
    const dlqTopic = topics.dlq(h.tenant);
    const keys = dispatchKeys('long', DISPATCHES);
    h.api.always({ kind: 'status', status: 503 });
    const downAt = Date.now();
    await publishDispatches(h, keys);
    await h.expectCommittedAtLogEnd(60_000);
    // Down until every dispatch is dead-lettered: longer than any dispatch's budget, however late its first
    // attempt was scheduled (a loaded worker takes a while over 250 first workflow tasks).
    // Counted where they are published (a consumer held open for minutes is the less reliable witness), then
    // the topic read to its end: a duplicate would show there.
    await waitFor(
      async () =>
        (metricSum(await worker.metrics(), 'dlq_messages_sent_total', { topic: dlqTopic }) ?? 0) >=
        DISPATCHES,
      { timeoutMs: BUDGET_MS + MAX_LATE_MS, intervalMs: 1_000, what: `${DISPATCHES} dead letters sent` },
    );
    const upAt = Date.now();
    const calls = h.api.requests.length;
    h.api.always(undefined);
    const letters = await readTopicToEnd(h.kafka, dlqTopic);
    const dlq = letters.filter((r) => r !== undefined);
    expect(dlq).toHaveLength(letters.length);

    const perKey = new Map<string, number>();
    for (const r of dlq) perKey.set(r.dispatch_key ?? '', (perKey.get(r.dispatch_key ?? '') ?? 0) + 1);
    expect([...perKey.keys()].sort()).toEqual(keys);
    expect([...perKey.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...idCounts(dlq).values()].filter((n) => n !== 1)).toEqual([]);
    const timings = await mapLimit(dlq, 16, async (record) => {
      const at = Date.parse(record.timestamp);
      const t = await executionFacts(h.client, record.workflow_id!, record.run_id!);
      return {
        record,
        ...t,
        afterStart: at - (t.startMs + BUDGET_MS),
        late: at - (t.scheduledMs + BUDGET_MS),
      };
    });
    const range = (xs: number[]) => `${Math.min(...xs)}..${Math.max(...xs)}`;
    const bound = callBound(BREAKER, upAt - downAt);
    process.stderr.write(
      `[outage longer than budget] dead letter minus (execution start + budget): ${range(timings.map((t) => t.afterStart))} ms; ` +
        `minus (first attempt scheduled + budget): ${range(timings.map((t) => t.late))} ms (slack ${DLQ_SLACK_MS}); ` +
        `first attempt scheduled after start: ${range(timings.map((t) => t.scheduledMs - t.startMs))} ms; ` +
        `outage ${upAt - downAt} ms; calls while down ${calls} (bound ${bound}); retry_count ` +
        `${range(dlq.map((r) => r.retry_count))} (0 in ${dlq.filter((r) => r.retry_count === 0).length}); errors: ` +
        `${JSON.stringify(errorKinds(dlq))}\n`,
    );
    for (const { record, failed } of timings) {
      expect(failed).toBe(true);
      expect(record).toMatchObject({ type: 'dispatch_failure', max_retries: null, tenant_id: h.tenant });
      expect(record.error).toMatch(/^retry budget of 90 s spent \(RETRY_MAX_DURATION_MS\)/);
    }
    // Not before the budget, counted from the execution's start (the workflow's own clock starts it there) ...
    expect(timings.filter((t) => !(t.afterStart >= 0))).toEqual([]);
    // ... and not long after it, counted from the first attempt's schedule (where the budget's timeout runs).
    expect(timings.filter((t) => !(t.late <= DLQ_SLACK_MS))).toEqual([]);
    expect(calls).toBeLessThanOrEqual(bound);
    // Attempts made, as Temporal counts them: the calls the API saw (one per attempt at most) and the attempt the
    // history shows started, less at most the one attempt still running when the budget's timeout fired (it never
    // reported: seen here for attempts started in the budget's last 0.4 s). 0 only for a call that never left the
    // queue (every slot held by waiting attempts until its budget ended).
    const undercounted = timings
      .map(({ record, startedAttempt }) => ({
        key: record.dispatch_key,
        retry_count: record.retry_count,
        calls: h.api.requestsFor(record.dispatch_key!).length,
        startedAttempt,
      }))
      .filter((r) => r.retry_count < Math.max(r.calls, r.startedAttempt) - 1);
    expect(undercounted).toEqual([]);
    // Nothing was created, and nothing can be: every execution is closed.
    expect(h.api.runs.size).toBe(0);
    await h.expectCommittedAtLogEnd();
  } finally {
    await h.cleanup();
  }
}

/** How many dead letters give each reason, told apart by the error's text before its first digit. */
function errorKinds(records: { error: string }[]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const r of records) {
    const kind = r.error.replace(/\d.*$/s, '…');
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

test(
  'runs API outages against a 90 s retry budget (503 for 45 s; connections refused for 45 s; 503 past the budget), at once',
  () =>
    runAtOnce({
      'the API answers 503 for 45 s, shorter than the budget': () =>
        shorterThanBudget('answers 503', answering503),
      'the API refuses connections for 45 s, shorter than the budget': () =>
        shorterThanBudget('refuses connections', refusingConnections),
      'the API answers 503 for longer than the budget': longerThanBudget,
    }),
  420_000,
);

/**
 * When the execution started, when its runs API call was scheduled, the number of the attempt the history shows
 * started (0 when none is recorded: a call still queued at its budget's end, or one timed out between attempts),
 * and whether it ended Failed.
 */
async function executionFacts(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{ startMs: number; scheduledMs: number; startedAttempt: number; failed: boolean }> {
  const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  const ms = (ts: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    Number(ts?.seconds ?? NaN) * 1000 + Math.floor((ts?.nanos ?? 0) / 1e6);
  const scheduled = events.find((e) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name?.startsWith('postRun'),
  );
  const started = events.find(
    (e) =>
      scheduled?.eventId != null &&
      String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId),
  );
  return {
    startMs: ms(events[0]?.eventTime),
    scheduledMs: ms(scheduled?.eventTime),
    startedAttempt: started?.activityTaskStartedEventAttributes?.attempt ?? 0,
    failed: events.at(-1)?.workflowExecutionFailedEventAttributes != null,
  };
}
