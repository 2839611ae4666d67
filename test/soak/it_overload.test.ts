/**
 * Overload: the runs API slows to 2 s per call while 5,000 dispatches arrive. The ingester keeps draining Kafka
 * into Temporal with bounded memory (the backlog waits in Temporal, up to admission's POIMEN_INGEST_MAX_OPEN open
 * dispatches, and in Kafka beyond them; never in the ingester), nothing is dropped, and the relay catches up once
 * the API is fast again.
 */
import { peakRssMiB } from '../../tools/bench/measure';
import { RELAY_HEAP } from '../../devstack/relayProcess';
import { topics } from '../../src/contract';
import { metricValue } from '../support/relay';
import { type Harness, createHarness } from '../support/relayHarness';
import { waitFor } from '../support/wait';

const N = 5000;
const SLOW_MS = 2000;
// The ingester's V8 old space is capped (RELAY_HEAP); RSS adds code, the young generation and native
// buffers. Measured peak with a 100k backlog: 136 MiB (docs/performance.md). This bound leaves headroom and
// still fails if the ingester buffered the backlog itself (5,000 records held with their starts).
const INGESTER_RSS_BOUND_MIB = RELAY_HEAP.ingest.oldSpaceMiB + 96;

describe('overload: a slow runs API while 5,000 dispatches arrive', () => {
  let h: Harness;

  beforeAll(async () => {
    // Test speed: the test samples the lag gauge as it falls; the shipped 5 s refresh would blur it.
    h = await createHarness({ partitions: 4, env: { POIMEN_LAG_REFRESH_MS: '500' } });
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it('drains Kafka into Temporal with bounded ingester memory, drops nothing, and catches up when the API speeds up', async () => {
    h.api.always({ kind: 'delay', ms: SLOW_MS });
    const worker = await h.startWorker();
    const ingester = await h.startIngester();

    const keys = Array.from({ length: N }, (_, i) => `overload-${i}`);
    for (let i = 0; i < N; i += 500) {
      await h.producer.send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: keys.slice(i, i + 500).map((k) => ({ key: `${h.tenant}:${k}`, value: h.dispatchValue(k) })),
      });
    }

    // While every call takes 2 s, the ingester still commits the whole backlog, as its open dispatches close. About
    // 240 s on 2 cores with nothing else running (the worker's 100 slots at 2 s a call, and Temporal's own pace);
    // the wait allows more than twice that for a busier machine: this is not a speed test.
    await waitFor(
      async () => (await h.offsets()).reduce((sum, p) => sum + Math.max(0, p.committed), 0) === N,
      { timeoutMs: 600_000, intervalMs: 1000, what: `all ${N} records committed by the ingester` },
    );
    const runsWhenCommitted = h.api.runs.size;
    // The backlog now waits in Temporal: executions are Running (their activities queued behind the 2 s API).
    const { count: runningWhenCommitted } = await h.client.workflow.count(
      `TaskQueue="${h.taskQueue}" AND ExecutionStatus="Running"`,
    );
    expect(runningWhenCommitted).toBeGreaterThan(0);

    const ingesterPeak = peakRssMiB(ingester.child.pid);
    expect(ingesterPeak).toBeDefined();
    expect(ingesterPeak!).toBeLessThan(INGESTER_RSS_BOUND_MIB);

    // The API recovers: everything left is relayed, each dispatch exactly once.
    h.api.always(undefined);
    await h.api.waitFor((api) => api.runs.size >= N, 900_000, `${N} runs`);
    expect(new Set(keys.filter((k) => h.api.runs.has(k))).size).toBe(N);
    const created = h.api.requests.filter((r) => r.answer === 201).length;
    expect(created).toBe(N);
    // The relay's own share (the double answers 201 once per key whatever the relay sends): a dispatch is
    // POSTed again only after an attempt the worker gave up on. Nothing drops an answer here, but 2 s per call
    // on a loaded machine can outlive the client's 3 s timeout; the double still admits that call, so its retry
    // gets 409. Each such attempt is counted by the worker's own request counter (code="timeout" or "error").
    // A relay that repeated a call it had an answer for would show thousands of 409s here.
    const text = await worker.metrics();
    const givenUp =
      (metricValue(text, 'poimen_runs_api_requests_total', { code: 'timeout' }) ?? 0) +
      (metricValue(text, 'poimen_runs_api_requests_total', { code: 'error' }) ?? 0);
    const conflicts = h.api.requests.filter((r) => r.answer === 409).length;
    expect(conflicts).toBeLessThanOrEqual(givenUp);
    expect(h.api.requests.length).toBeLessThanOrEqual(N + givenUp);
    const posts = new Map<string, number>();
    for (const r of h.api.requests) {
      const k = (r.json as { dispatch_key: string }).dispatch_key;
      posts.set(k, (posts.get(k) ?? 0) + 1);
    }
    expect([...posts.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(givenUp);
    const running = await waitFor(
      async () => {
        const { count } = await h.client.workflow.count(
          `TaskQueue="${h.taskQueue}" AND ExecutionStatus="Running"`,
        );
        return count === 0 ? true : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1000, what: 'no Running executions' },
    );
    expect(running).toBe(true);
    // One execution per dispatch, counted by workflow id once visibility lists them all.
    const executions = await waitFor(
      async () => {
        const seen = new Map<string, number>();
        for await (const wf of h.client.workflow.list({ query: `TaskQueue="${h.taskQueue}"` })) {
          seen.set(wf.workflowId, (seen.get(wf.workflowId) ?? 0) + 1);
        }
        return seen.size >= N ? seen : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 2000, what: `visibility to list ${N} executions` },
    );
    expect([...executions.keys()].sort()).toEqual(keys.map((k) => h.wfId(k)).sort());
    expect([...executions].filter(([, n]) => n !== 1)).toEqual([]);
    await h.expectCommittedAtLogEnd();
    process.stderr.write(
      `[overload] ingester peak RSS ${ingesterPeak} MiB; runs / Running when the backlog was committed: ${runsWhenCommitted} / ${runningWhenCommitted}; POSTs ${h.api.requests.length}; 409s ${conflicts}; attempts given up (timeout/error) ${givenUp}\n`,
    );
  }, 1_200_000);
});
