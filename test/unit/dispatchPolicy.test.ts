/**
 * The policy the ingester writes into each workflow input (contract §5): the budget for current workers, and for
 * workers of the version before (attempt counts only) an attempt count that retries about as long.
 */
import { loadRelayConfig } from '../../src/config';
import { dispatchPolicyOf } from '../../src/ingest/policy';
import { legacyMaxAttempts } from '../../src/contract/workflow';

test('the defaults: a 24 h budget, no count cap, and about 297 attempts for an earlier worker', () => {
  const policy = dispatchPolicyOf(loadRelayConfig('ingester', {}));
  expect(policy).toEqual({
    attemptTimeoutMs: 10_000,
    initialIntervalMs: 1_000,
    backoff: 2,
    maxIntervalMs: 300_000,
    maxDurationMs: 86_400_000,
    attemptCap: 0,
    maxAttempts: 297,
  });
  // 1 + 2 + … + 256 s, then 5 min waits: the earlier worker's last attempt lands past the 24 h budget.
  const waits = [...Array(policy.maxAttempts - 1).keys()].map((i) => Math.min(1_000 * 2 ** i, 300_000));
  const total = waits.reduce((a, b) => a + b, 0);
  expect(total).toBeGreaterThanOrEqual(86_400_000);
  expect(total - waits.at(-1)!).toBeLessThan(86_400_000);
});

test('a positive RETRY_MAX_ATTEMPTS is the cap for both kinds of worker', () => {
  const policy = dispatchPolicyOf(loadRelayConfig('ingester', { RETRY_MAX_ATTEMPTS: '7' }));
  expect(policy).toMatchObject({ attemptCap: 7, maxAttempts: 7 });
});

test('the count for earlier workers is bounded even for a budget no interval could fill', () => {
  expect(
    legacyMaxAttempts({
      initialIntervalMs: 1,
      backoff: 1,
      maxIntervalMs: 1,
      maxDurationMs: 30 * 86_400_000,
      attemptCap: 0,
    }),
  ).toBe(100_000);
});

test('an earlier worker counts the attempt due exactly at the budget’s end, and none after it', () => {
  const everySecond = { initialIntervalMs: 1_000, backoff: 1, maxIntervalMs: 1_000, attemptCap: 0 };
  // Attempts at 0 s, 1 s, 2 s and 3 s: the last one is due at the end of a 3 s budget.
  expect(legacyMaxAttempts({ ...everySecond, maxDurationMs: 3_000 })).toBe(4);
  expect(legacyMaxAttempts({ ...everySecond, maxDurationMs: 3_001 })).toBe(5);
});
