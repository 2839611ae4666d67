/**
 * Contract §5, whose turn the worker's probe is: a tenant whose calls fail for good opens the worker's breaker
 * (no other tenant is answered, so its failures are the API's) and holds most of the attempts waiting on it. A
 * healthy tenant's dispatch that arrives then takes the next probe, closes the breaker and completes, instead of
 * waiting behind one failed probe (2 s each, the shipped interval) per attempt of the failing tenant. Real Kafka,
 * real Temporal, the relay's own processes and the runs API double (node:http), with the shipped breaker settings.
 */
import { topics, workflowId } from '../src/contract';
import { circuitState, dispatchKeys } from './support/outage';
import { metricValue } from './support/relay';
import { createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

const FAILING = 30;

test("a healthy tenant's dispatch takes the next probe of a breaker another tenant's failures hold open", async () => {
  // The failing tenant's dispatches end at a 2-minute budget rather than the shipped 24 hours: after the test no
  // worker polls their queue, and a developer's stack would keep them a day.
  const h = await createHarness({ tenants: 2, env: { RETRY_MAX_DURATION_MS: '120000' } });
  try {
    const [sick, well] = h.tenants as [string, string];
    const failing = dispatchKeys('sick', FAILING);
    const failingSet = new Set(failing);
    h.api.faultPolicy((key) =>
      key !== undefined && failingSet.has(key) ? { kind: 'status', status: 503 } : undefined,
    );
    const worker = await h.startWorker();
    await h.startIngester();
    await h.producer.send({
      topic: topics.dispatch(sick),
      acks: -1,
      messages: failing.map((key) => ({ key, value: h.dispatchValue(key) })),
    });
    const waiting = async () => metricValue(await worker.metrics(), 'poimen_runs_api_breaker_waiting') ?? 0;
    await waitFor(async () => (await circuitState(worker)) !== 0 && (await waiting()) >= (FAILING * 4) / 5, {
      timeoutMs: 90_000,
      what: "the failing tenant's attempts waiting on the worker's open breaker",
    });
    const waitingBefore = await waiting();

    const arrived = h.api.requests.length;
    await h.publish(h.dispatchValue('well-0'), { key: 'well-0', topic: topics.dispatch(well) });
    const handle = h.client.workflow.getHandle(workflowId(well, 'well-0'));
    await waitFor(() => handle.describe().then(() => true), {
      what: "the healthy tenant's dispatch started",
    });
    const result = await handle.result();
    expect(result).toEqual({ run_id: h.api.runs.get('well-0'), admission: 'created' });

    const since = h.api.requests
      .slice(arrived)
      .map((r) => (r.json as { dispatch_key?: string }).dispatch_key);
    const ahead = since.indexOf('well-0');
    process.stderr.write(
      `[probe turns] ${waitingBefore} attempts waiting; calls of the failing tenant before the healthy one: ${ahead}\n`,
    );
    // At most the probe already out or due while the healthy dispatch was being started, never one per waiting
    // attempt.
    expect(ahead).toBeGreaterThanOrEqual(0);
    expect(ahead).toBeLessThanOrEqual(2);
    expect(h.api.requestsFor('well-0').map((r) => r.answer)).toEqual([201]);
  } finally {
    await h.cleanup();
  }
});
