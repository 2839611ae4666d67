/**
 * contract §5: a `Retry-After` never delays an attempt beyond the retry policy's maximum interval. Temporal itself
 * does not bound an activity's `nextRetryDelay` by `maximumInterval`, so a proxy answering `Retry-After: 86400`
 * (or a date far ahead, or a number too large for a Duration) would otherwise park a dispatch for a day per attempt.
 */
import { type Harness, createHarness } from './support/relayHarness';
import { waitFor } from './support/wait';

jest.setTimeout(180_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

test.each([
  ['a day in seconds', '86400'],
  ['an HTTP date a year ahead', new Date(Date.now() + 365 * 86_400_000).toUTCString()],
  ['more seconds than a Duration holds', '99999999999999999999'],
])('Retry-After of %s waits at most the maximum interval', async (_what, retryAfter) => {
  // The cap under test: a 1 s maximum interval, as the shipped 5 min one would outlast the test.
  h = await createHarness({ env: { RETRY_MAX_INTERVAL_MS: '1000' } });
  await h.startWorker();
  await h.startIngester();
  h.api.scriptFor('far', { kind: 'status', status: 503, retryAfter });
  await h.publish(h.dispatchValue('far'));
  const handle = h.client.workflow.getHandle(h.wfId('far'));
  await waitFor(() => handle.describe().then(() => true), { what: 'the workflow to exist' });
  // Completes well within the test's time, with two requests: the 503 and the admitted retry.
  await waitFor(async () => (await handle.describe()).status.name === 'COMPLETED', {
    timeoutMs: 30_000,
    what: 'the dispatch to complete after the capped delay',
  });
  const [first, second] = h.api.requestsFor('far');
  expect(first?.answer).toBe(503);
  expect(second?.answer).toBe(201);
  // The retry came after the policy's delay, not at once and not after the Retry-After.
  expect(second!.receivedAtMs - first!.receivedAtMs).toBeLessThan(1000 + 5000);
  await h.expectCommittedAtLogEnd();
});
