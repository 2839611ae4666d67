/**
 * The defaults the relay applies when a variable is unset, each stated once: those the contract fixes
 * (docs/contract.md §5: the retry policy and the attempt timeout), the runs-API circuit breaker's, and the ports
 * /metrics listens on. Pure: the workflow reads the retry policy for executions whose input carries none, the
 * config module all of them for unset variables.
 */

/**
 * Temporal retry policy of the `postRun` activity: retried until `maxDurationMs` has passed since the dispatch's
 * first attempt; `maxAttempts` 0 is no count limit (a positive value also caps).
 */
export const RETRY_DEFAULTS = {
  initialIntervalMs: 1_000,
  backoff: 2.0,
  maxIntervalMs: 5 * 60_000,
  maxAttempts: 0,
  maxDurationMs: 24 * 3_600_000,
} as const;

/** The worker's circuit breaker on the runs API (docs/design.md, "Riding out an outage"). */
export const BREAKER_DEFAULTS = {
  /** Consecutive outage-class failures that open it. */
  failures: 5,
  /** While open, at most one probe call per this interval per worker. */
  probeIntervalMs: 2_000,
} as const;

/** Start-to-close timeout of one `POST /v1/runs` attempt (RUNS_API_TIMEOUT_MS). */
export const RUNS_API_TIMEOUT_MS_DEFAULT = 10_000;

/** Where /metrics, /healthz and /readyz listen when METRICS_PORT is unset (0: a one-shot command serves none). */
export const DEFAULT_METRICS_PORT = { ingester: 9464, worker: 9465, cli: 0 } as const;
