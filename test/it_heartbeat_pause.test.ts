/**
 * Attempts waiting on the circuit breaker ride out a spell of late heartbeats. While the runs API is down, Temporal
 * takes every heartbeat 8 s late for 40 s (a server or its database slow on writes), and no waiting attempt is timed
 * out: one timed out is run again by Temporal beside the attempt still waiting, which posts a second time once the
 * API is back, and under an attempts cap the timeout spends an attempt. Real Kafka, real Temporal behind a gRPC
 * proxy that holds RecordActivityTaskHeartbeat, the relay's own processes with the shipped breaker settings, and
 * the runs API double (node:http).
 */
import { dispatchKeys, expectEachCreatedOnce, publishDispatches } from './support/outage';
import { metricValue } from './support/relay';
import { startGrpcProxy } from './support/grpcProxy';
import { createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const DISPATCHES = 20;
/** Above the 6 s the SDK's own heartbeat throttle left a waiting attempt (24 s of a 30 s timeout). */
const LATE_MS = 8_000;
/** Longer than the heartbeat timeout, so every waiting attempt's next heartbeat falls in it. */
const SPELL_MS = 40_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a spell of 8 s late heartbeats times out no attempt waiting on the breaker, and nothing is posted twice', async () => {
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
    // All but the breaker's probe, which is out calling every 2 s.
    await waitFor(async () => (await waiting()) >= DISPATCHES - 1, {
      timeoutMs: 60_000,
      what: 'the attempts waiting on the open breaker',
    });

    // Each attempt's last failure while the heartbeats are late: a timeout names itself there until the next
    // failure (a probe's 503) replaces it, so it is read every 2 s.
    const timedOut = new Set<string>();
    const look = async () => {
      for (const key of keys) {
        const d = await h.client.workflow.getHandle(h.wfId(key)).describe();
        const failure = d.raw.pendingActivities?.[0]?.lastFailure;
        if (failure?.timeoutFailureInfo) timedOut.add(`${key} (${failure.message ?? 'timeout'})`);
      }
    };
    delays.RecordActivityTaskHeartbeat = LATE_MS;
    const spellEnd = Date.now() + SPELL_MS;
    while (Date.now() < spellEnd) {
      await look();
      await sleep(2_000);
    }
    delete delays.RecordActivityTaskHeartbeat;
    // The last late heartbeats land, and a timeout they did not prevent shows.
    const settleEnd = Date.now() + LATE_MS + 4_000;
    while (Date.now() < settleEnd) {
      await look();
      await sleep(2_000);
    }
    process.stderr.write(
      `[late heartbeats] attempts timed out: ${timedOut.size} ${[...timedOut].join(', ')}\n`,
    );
    expect([...timedOut]).toEqual([]);

    // The API is back: each dispatch is created once, and no second POST hides behind the double's dedup.
    h.api.always(undefined);
    await h.api.waitFor((a) => a.runs.size === DISPATCHES, 60_000, `${DISPATCHES} runs`);
    expect(expectEachCreatedOnce(h.api, keys).conflicts).toBe(0);
    await h.expectCommittedAtLogEnd();
  } finally {
    await h.cleanup();
    await proxy.close();
  }
});
