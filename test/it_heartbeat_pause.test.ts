/**
 * Attempts waiting on the circuit breaker ride out a spell of late heartbeats. While the runs API is down, Temporal
 * takes every heartbeat 10 s late for 40 s (a server or its database slow on writes), and no waiting attempt is timed
 * out: one timed out is an attempt spent without a call (under an attempts cap, one fewer for the dispatch), and
 * Temporal runs the call again beside the attempt still waiting. Counted by an invariant once the API is back: each
 * attempt Temporal counted made exactly one POST. Real Kafka, real Temporal behind a gRPC proxy that holds
 * RecordActivityTaskHeartbeat, the relay's own processes with the shipped breaker settings, and the runs API double.
 */
import { dispatchKeys, expectEachCreatedOnce, publishDispatches } from './support/outage';
import { metricValue } from './support/relay';
import { startGrpcProxy } from './support/grpcProxy';
import { callCompletion } from './support/lostCompletions';
import { createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const DISPATCHES = 20;
/**
 * Late enough that the SDK's own throttle (one heartbeat per 24 s of a 30 s timeout) leaves a gap of 34 s, and the
 * workers' (HEARTBEAT_THROTTLE_MS, 12 s) one of 22 s.
 */
const LATE_MS = 10_000;
/** Longer than the heartbeat timeout, so every waiting attempt's next heartbeat falls in it. */
const SPELL_MS = 40_000;

test('a spell of 10 s late heartbeats times out no attempt waiting on the breaker: every attempt made one call', async () => {
  const delays: Record<string, number> = {};
  const proxy = await startGrpcProxy(testServices().temporalAddress, {}, delays);
  // A 3-minute budget rather than 24 hours: should the test fail midway, a developer's stack does not keep them a day.
  const h = await createHarness({ temporalAddress: proxy.address, env: { RETRY_MAX_DURATION_MS: '180000' } });
  try {
    h.api.always({ kind: 'status', status: 503 });
    const worker = await h.startWorker();
    await h.startIngester();
    const keys = dispatchKeys('late', DISPATCHES);
    await publishDispatches(h, keys);
    const waiting = async () => metricValue(await worker.metrics(), 'poimen_runs_api_breaker_waiting') ?? 0;
    // All but a few: the breaker's probe is out calling every 2 s, and its attempt's retry waits out a backoff.
    await waitFor(async () => (await waiting()) >= DISPATCHES - 3, {
      timeoutMs: 60_000,
      what: 'the attempts waiting on the open breaker',
    });
    delays.RecordActivityTaskHeartbeat = LATE_MS;
    await new Promise((r) => setTimeout(r, SPELL_MS));
    delete delays.RecordActivityTaskHeartbeat;

    h.api.always(undefined);
    await h.api.waitFor((a) => a.runs.size === DISPATCHES, 60_000, `${DISPATCHES} runs`);
    expectEachCreatedOnce(h.api, keys);
    await h.expectCommittedAtLogEnd();
    // A timed-out attempt is counted by Temporal and made no call: the completing attempt's number then exceeds
    // the key's POSTs.
    const spent: string[] = [];
    for (const key of keys) {
      const handle = h.client.workflow.getHandle(h.wfId(key));
      await handle.result();
      const [attempt] = callCompletion(await handle.fetchHistory()).completing;
      const posts = h.api.requestsFor(key).length;
      if (attempt !== posts) spent.push(`${key}: attempt ${attempt}, ${posts} POST(s)`);
    }
    process.stderr.write(`[late heartbeats] attempts without a call: ${spent.length} ${spent.join('; ')}\n`);
    expect(spent).toEqual([]);
  } finally {
    await h.cleanup();
    await proxy.close();
  }
});
