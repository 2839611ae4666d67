/**
 * The defaults of the contract's retry policy and attempt timeout (docs/contract.md §5), the runs-API circuit
 * breaker's, and the ports /metrics listens on, as objects for code that wants them together. Each value is its
 * variable's row's default (vars/), never written here.
 */
import { type DefaultedVar, PerRole, type Role, defaultOf } from './envVar';
import { PROCESS } from './vars/process';
import { RUNS_API } from './vars/runsApi';
import { WORKER } from './vars/worker';

/** The default of a variable whose default does not differ by process. */
function fixed<T>(v: DefaultedVar<T>): T {
  if (v.default instanceof PerRole) throw new Error(`${v.name}: its default differs by process`);
  return v.default;
}

/**
 * Temporal retry policy of the `postRun` activity: retried until `maxDurationMs` has passed since the dispatch's
 * first attempt; `maxAttempts` 0 is no count limit (a positive value also caps).
 */
export const RETRY_DEFAULTS = {
  initialIntervalMs: fixed(RUNS_API.RETRY_INITIAL_INTERVAL_MS),
  backoff: fixed(RUNS_API.RETRY_BACKOFF),
  maxIntervalMs: fixed(RUNS_API.RETRY_MAX_INTERVAL_MS),
  maxAttempts: fixed(RUNS_API.RETRY_MAX_ATTEMPTS),
  maxDurationMs: fixed(RUNS_API.RETRY_MAX_DURATION_MS),
} as const;

/** The worker's circuit breaker on the runs API (docs/design.md, "Riding out an outage"). */
export const BREAKER_DEFAULTS = {
  /** Consecutive outage-class failures that open it. */
  failures: fixed(WORKER.POIMEN_BREAKER_FAILURES),
  /** While open, at most one probe call per this interval per worker. */
  probeIntervalMs: fixed(WORKER.POIMEN_BREAKER_PROBE_INTERVAL_MS),
} as const;

/** Start-to-close timeout of one `POST /v1/runs` attempt (RUNS_API_TIMEOUT_MS). */
export const RUNS_API_TIMEOUT_MS_DEFAULT = fixed(RUNS_API.RUNS_API_TIMEOUT_MS);

/** Where /metrics, /healthz and /readyz listen when METRICS_PORT is unset (0: a one-shot command serves none). */
export const DEFAULT_METRICS_PORT: Readonly<Record<Role, number>> = {
  ingester: defaultOf(PROCESS.METRICS_PORT, 'ingester'),
  worker: defaultOf(PROCESS.METRICS_PORT, 'worker'),
  cli: defaultOf(PROCESS.METRICS_PORT, 'cli'),
};
