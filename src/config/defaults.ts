/**
 * The defaults the contract fixes (docs/contract.md §5: the retry budget and the attempt timeout), stated once.
 * Pure: the workflow reads them for executions whose input carries no policy, the config module for unset
 * variables.
 */

/** Temporal retry policy of the `postRun` activity. */
export const RETRY_DEFAULTS = {
  initialIntervalMs: 1_000,
  backoff: 2.0,
  maxIntervalMs: 60_000,
  maxAttempts: 10,
} as const;

/** Start-to-close timeout of one `POST /v1/runs` attempt (RUNS_API_TIMEOUT_MS). */
export const RUNS_API_TIMEOUT_MS_DEFAULT = 10_000;

/** Where /metrics, /healthz and /readyz listen when METRICS_PORT is unset (0: a one-shot command serves none). */
export const DEFAULT_METRICS_PORT = { ingester: 9464, worker: 9465, cli: 0 } as const;
