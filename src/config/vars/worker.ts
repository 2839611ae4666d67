/**
 * Rows of the env table for the worker's tuning (beyond contract §8, prefixed POIMEN_): its slots and sticky cache,
 * its connections to the runs API, the circuit breaker on it (docs/design.md, "Riding out an outage") and how long
 * a SIGTERM waits. Each row is the variable's one home (envVar.ts).
 */
import { parsed, rows } from '../envVar';
import { intIn } from '../schema';

export const WORKER = rows({
  POIMEN_WORKER_MAX_ACTIVITIES: parsed({
    description: 'concurrent runs API calls (inputs up to 32 KiB)',
    readBy: ['worker'],
    schema: intIn(1, 10_000),
    default: 100,
  }),
  POIMEN_WORKER_MAX_WORKFLOW_TASKS: parsed({
    description: 'concurrent workflow tasks',
    readBy: ['worker'],
    schema: intIn(1, 10_000),
    default: 20,
  }),
  POIMEN_WORKER_MAX_LARGE_ACTIVITIES: parsed({
    description: 'concurrent runs API calls with inputs over 32 KiB',
    readBy: ['worker'],
    schema: intIn(1, 10_000),
    default: 8,
  }),
  POIMEN_WORKER_MAX_CACHED_WORKFLOWS: parsed({
    description: 'sticky workflow cache size (0: off)',
    readBy: ['worker'],
    schema: intIn(0, 100_000),
    default: 1000,
  }),
  POIMEN_RUNS_API_CONNECTIONS: parsed({
    description: 'keep-alive connections to the runs API',
    readBy: ['worker'],
    schema: intIn(1, 10_000),
    default: 64,
  }),
  POIMEN_BREAKER_FAILURES: parsed({
    description: 'consecutive runs API outage failures that open the circuit breaker',
    readBy: ['worker'],
    schema: intIn(1, 10_000),
    default: 5,
  }),
  POIMEN_BREAKER_PROBE_INTERVAL_MS: parsed({
    description: 'while the breaker is open, one probe call per this interval per worker',
    readBy: ['worker'],
    schema: intIn(100, 3_600_000),
    default: 2_000,
  }),
  POIMEN_WORKER_SHUTDOWN_GRACE_MS: parsed({
    description: 'how long SIGTERM waits for running calls',
    readBy: ['worker'],
    schema: intIn(0, 3_600_000),
    default: 30_000,
  }),
});
