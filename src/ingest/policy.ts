/**
 * The retry policy each dispatch carries in its workflow input, from the ingester's configuration: an execution keeps
 * the settings it started with across worker deploys and configuration changes, and the Web UI shows them.
 */
import type { RelayConfig } from '../config';
import { type DispatchPolicy, legacyMaxAttempts } from '../contract/workflow';

export function dispatchPolicyOf(cfg: Pick<RelayConfig, 'retry' | 'runsApi'>): DispatchPolicy {
  const { initialIntervalMs, backoff, maxIntervalMs, maxAttempts, maxDurationMs } = cfg.retry;
  const budget = { initialIntervalMs, backoff, maxIntervalMs, maxDurationMs, attemptCap: maxAttempts };
  return {
    attemptTimeoutMs: cfg.runsApi.timeoutMs,
    initialIntervalMs,
    backoff,
    maxIntervalMs,
    maxDurationMs,
    attemptCap: maxAttempts,
    // What a worker of an earlier version, which knows no budget, reads instead.
    maxAttempts: legacyMaxAttempts(budget),
  };
}
