/**
 * The `dispatch` workflow's side of the contract: the shapes the ingester, the workflow and its activities pass
 * each other (the workflow's input and result, each activity's arguments and failure details), and the names
 * recorded in histories (patch ids, task queues, failure types). Pure: imported by workflow code. A shape here
 * never changes under the same workflow or activity name (test/unit/signatures.test.ts).
 */
import type { Dispatch, DispatchHead, LegacyDispatch } from './dispatch';
import type { AttemptHistory } from './attempts';
import type { DlqSource } from './dlqRecord';

/** Retry and timeout settings for the `postRun` activity (contract §5 defaults). */
export interface DispatchPolicy {
  attemptTimeoutMs: number;
  initialIntervalMs: number;
  backoff: number;
  maxIntervalMs: number;
  maxAttempts: number;
  /**
   * The retry budget (RETRY_MAX_DURATION_MS), from the first attempt's schedule. Its presence marks an execution
   * started with a budget: the call is then bounded by time, `attemptCap` is its count limit, and `maxAttempts`
   * is only for workers of earlier versions, which do not know the budget (`legacyMaxAttempts`).
   */
  maxDurationMs?: number;
  /** RETRY_MAX_ATTEMPTS with a budget: 0 is no count limit. */
  attemptCap?: number;
  /**
   * Start-to-close timeout of each `deadLetter` attempt. Optional, and not set by the ingester: executions
   * without it (all earlier ones) keep the 60 s they were always scheduled with.
   */
  deadLetterTimeoutMs?: number;
}

/**
 * The policy of an execution whose input carries none (or lacks a field): what such executions were always given.
 * Frozen here, not taken from config/defaults.ts: a change of the configured defaults applies to new dispatches
 * (the ingester writes the policy into each input) and must not reach executions already running.
 */
export const DEFAULT_DISPATCH_POLICY: DispatchPolicy = {
  attemptTimeoutMs: 10_000,
  initialIntervalMs: 1_000,
  backoff: 2.0,
  maxIntervalMs: 60_000,
  maxAttempts: 10,
};

/**
 * The attempt count that makes a worker of an earlier version (attempt-count retries only) retry for about as long
 * as the budget: during a rolling deploy, or a rollback, such a worker may run an execution started with a budget,
 * and must neither give up after minutes nor retry for ever. A positive cap is itself the answer.
 */
export function legacyMaxAttempts(p: {
  initialIntervalMs: number;
  backoff: number;
  maxIntervalMs: number;
  maxDurationMs: number;
  attemptCap: number;
}): number {
  if (p.attemptCap > 0) return p.attemptCap;
  let attempts = 1;
  let elapsedMs = 0;
  let intervalMs = p.initialIntervalMs;
  // Bounded: past 100,000 attempts the budget is effectively unlimited for any sane interval anyway.
  while (elapsedMs < p.maxDurationMs && attempts < 100_000) {
    elapsedMs += Math.min(intervalMs, p.maxIntervalMs);
    intervalMs *= p.backoff;
    attempts += 1;
  }
  return attempts;
}

/**
 * The workflow's input. The policy travels with each dispatch (set by the ingester from its configuration),
 * so an execution keeps the settings it started with across worker deploys, and the Web UI shows them.
 */
export interface DispatchInput {
  tenant: string;
  /** Executions started by an earlier ingester carry the legacy shape until they finish. */
  dispatch: Dispatch | LegacyDispatch;
  source: DlqSource;
  traceparent?: string;
  policy?: Partial<DispatchPolicy>;
}

export interface DispatchResult {
  run_id: string | null;
  admission: 'created' | 'existing';
}

/**
 * The `postRun` activity's first argument. The input's text is its second argument, as bytes (a binary payload),
 * so neither the cached execution nor the running activity keeps it on the JavaScript heap; executions started
 * before that carry the whole dispatch here and no second argument.
 */
export interface PostRunInput {
  tenant: string;
  dispatch: DispatchHead | Dispatch | LegacyDispatch;
  traceparent?: string;
  attemptTimeoutMs: number;
  /** Kafka record timestamp (ms since epoch) for the record → API latency histogram. */
  recordTimestampMs: number;
}

/** The first argument of `postRunWithInputBytes`: the dispatch without its input, whose text is the second. */
export interface PostRunHeadInput extends Omit<PostRunInput, 'dispatch'> {
  dispatch: DispatchHead;
}

/**
 * Executions that record this patch schedule `postRunWithInputBytes(head, bytes)`; those that do not (recorded
 * before it) schedule `postRun` as they always did. Activity names are fixed per argument shape
 * (test/unit/signatures.test.ts): an older worker polling the same queue during a rolling deploy must never
 * receive a shape it reads differently.
 */
export const POST_RUN_BY_SHAPE_PATCH = 'postRun-named-by-shape';

/**
 * Executions that record this patch schedule a call whose input text is over LARGE_INPUT_BYTES on
 * `largeInputTaskQueue(taskQueue)`, served in every worker process by a worker with few slots
 * (POIMEN_WORKER_MAX_LARGE_ACTIVITIES), so memory is bounded by bytes and not only by slot count.
 */
export const LARGE_INPUT_QUEUE_PATCH = 'postRun-large-input-queue';
export const LARGE_INPUT_BYTES = 32 * 1024;
export const largeInputTaskQueue = (taskQueue: string): string => `${taskQueue}-large`;

/**
 * Executions that record this patch schedule `deadLetter` on `deadLetterTaskQueue(taskQueue)`: attempts waiting on
 * the circuit breaker can fill the dispatch queue's slots for as long as an outage lasts, and RUNS_API_MAX_RPS
 * limits that queue; neither may hold a dead letter back.
 */
export const DEAD_LETTER_QUEUE_PATCH = 'deadLetter-own-queue';

/** Executions that record this patch wait for the retry budget's end before dead-lettering (src/workflows/index.ts). */
export const BUDGET_END_WAIT_PATCH = 'budget-wait-for-end';
export const deadLetterTaskQueue = (taskQueue: string): string => `${taskQueue}-deadletter`;

/**
 * An attempt that may wait on the breaker heartbeats; its heartbeat timeout is the HTTP timeout plus this, so a call
 * that starts right after a (throttled) heartbeat still ends inside it, and a dead worker is noticed in seconds.
 */
export const BREAKER_HEARTBEAT_MARGIN_MS = 20_000;

/**
 * The longest a worker holds an attempt's heartbeat back (its maxHeartbeatThrottleInterval). The SDK's own bound,
 * 0.8 × the heartbeat timeout, sent a waiting attempt's heartbeat 24 s after the one before against a 30 s timeout:
 * one heartbeat held up over 6 s (a server or database pause) timed the attempt out. At this bound a heartbeat up to
 * the heartbeat timeout less it late passes (18 s at the default HTTP timeout, 8 s at the shortest). Above the
 * default HTTP timeout, so that a call timing out there still reports its closing heartbeat in its failure rather
 * than in a write of its own (docs/design.md, "A Temporal slow to take heartbeats").
 */
export const HEARTBEAT_THROTTLE_MS = 12_000;

/** Heartbeat details of an attempt waiting on the circuit breaker (`dispatch status` shows them). */
export interface BreakerWaitDetails {
  waitingOnBreaker: boolean;
  /** When the breaker opened (ISO-8601). */
  openSince: string | null;
  httpStatus: number | null;
  attempt: number;
}

/**
 * Details carried by a failed `postRun` attempt, for the dead letter and the Web UI. The attempt history is absent
 * from failures written before it was kept (and from a refusal made before any call).
 */
export interface PostRunFailureDetails extends Partial<AttemptHistory> {
  httpStatus: number | null;
  attempt: number;
}

/**
 * The `deadLetter` activity's argument. Without `dispatch` (the usual case) the activity reads the dispatch
 * from the execution's start event, so the execution need not keep it while its call is retried.
 */
export interface DeadLetterInput {
  tenant: string;
  /** Absent only in activities scheduled by executions started earlier, which carry `dispatch`. */
  dispatchKey?: string;
  dispatch?: Dispatch | LegacyDispatch;
  source: DlqSource;
  error: string;
  httpStatus: number | null;
  retryCount: number;
  maxRetries: number;
  workflowId: string;
  workflowRunId: string;
}

/**
 * Executions that record this patch hold their call while their tenant is paused (docs/design.md, "Pausing a
 * tenant"). Each call they schedule is named `holdableCallId(holds, attemptsBefore)`: a worker that finds the tenant
 * paused as an attempt begins, or just before it calls, ends the call with TENANT_PAUSED without counting that
 * attempt, and the execution waits for the resume (the TENANT_RESUMED_SIGNAL, or its next look: the local activity
 * `tenantPauseOf`), then schedules the call again with the budget and the attempts left. Other activity ids (the SDK's sequence numbers) are calls that
 * never hold.
 */
export const TENANT_HOLD_PATCH = 'call-held-while-tenant-paused';
/**
 * Executions that record this patch, whose holdable call ran out of budget at the server while no attempt could
 * bring the pause back (in Temporal's retry backoff, queued with every worker down or starved, or held a moment
 * after the budget's end), look at the tenant's pause before the dead letter: a tenant paused before the budget
 * ended holds the call as a held failure would have, with the budget from the pause on given back.
 */
export const BUDGET_SPENT_PAUSED_PATCH = 'budget-spent-while-tenant-paused';
export const TENANT_PAUSED = 'TenantPaused';
/** Sent by `tenant resume` to the tenant's running executions: a held one looks again at once. */
export const TENANT_RESUMED_SIGNAL = 'tenantResumed';

/** A tenant's pause as a held execution sees it: `tenantPauseOf`'s answer while the tenant is paused. */
export interface TenantHoldState {
  /** When the tenant was paused (the pause record's `at`). */
  pausedAt: string;
  reason: string | null;
}

/** Details of a TENANT_PAUSED failure: the attempts made before the hold, and the pause that held it. */
export interface TenantHeldDetails extends TenantHoldState, Partial<AttemptHistory> {
  /** The last attempt's HTTP status; null when it had none (or no attempt was made). */
  httpStatus: number | null;
  /** The attempts made so far (a held attempt that made no request is not among them). */
  attempt: number;
}

const HOLDABLE_CALL = /^call-(\d+)-after-(\d+)$/;

/** The activity id of a holdable call: the holds before it, and the attempts it numbers its own after. */
export const holdableCallId = (holds: number, attemptsBefore: number): string =>
  `call-${holds}-after-${attemptsBefore}`;

/** What a holdable call's activity id says; undefined for a call that cannot hold. */
export function holdableCall(activityId: string): { holds: number; attemptsBefore: number } | undefined {
  const m = HOLDABLE_CALL.exec(activityId);
  return m ? { holds: Number(m[1]), attemptsBefore: Number(m[2]) } : undefined;
}

/** Failure types: the API refused the dispatch for good / the dispatch ended dead-lettered. */
export const RUNS_API_REJECTED = 'RunsApiRejected';
export const RUNS_API_UNAVAILABLE = 'RunsApiUnavailable';
export const DISPATCH_FAILED = 'DispatchFailed';
