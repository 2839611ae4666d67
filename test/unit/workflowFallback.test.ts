import { RETRY_DEFAULTS, RUNS_API_TIMEOUT_MS_DEFAULT } from '../../src/config/defaults';
import { DEFAULT_DISPATCH_POLICY } from '../../src/contract/workflow';

describe('the policy of an execution whose input carries none', () => {
  it('stays what such executions were always given, whatever the configured defaults become', () => {
    expect(DEFAULT_DISPATCH_POLICY).toEqual({
      attemptTimeoutMs: 10_000,
      initialIntervalMs: 1_000,
      backoff: 2,
      maxIntervalMs: 60_000,
      maxAttempts: 10,
    });
  });

  it('is a frozen copy, not the configuration module (the workflow bundle holds no config code)', () => {
    // The contract's defaults moved to a time budget; executions without a policy keep the old count.
    expect(DEFAULT_DISPATCH_POLICY).not.toEqual({
      attemptTimeoutMs: RUNS_API_TIMEOUT_MS_DEFAULT,
      ...RETRY_DEFAULTS,
    });
    expect(RETRY_DEFAULTS).toMatchObject({
      maxIntervalMs: 300_000,
      maxAttempts: 0,
      maxDurationMs: 86_400_000,
    });
  });
});
