/**
 * What a failed runs API call means for the dead letter: why it ended (refused for good, the attempts cap, or the
 * retry budget), how many attempts were made, and the last HTTP status. Workflow code: imports only
 * @temporalio/workflow and pure shapes.
 */
import {
  type ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  defaultPayloadConverter,
} from '@temporalio/workflow';
import type { BreakerWaitDetails, DispatchPolicy, PostRunFailureDetails } from './types';

export interface CallEnding {
  error: string;
  httpStatus: number | null;
  retryCount: number;
  /** The count limit the dead letter names; 0 when there is none (the record then says null). */
  maxRetries: number;
  /** The budget ran out (as opposed to a refusal or the attempts cap). */
  budgetSpent: boolean;
}

type Details = Partial<PostRunFailureDetails & BreakerWaitDetails>;

/** The details the last attempt left: its failure's, or (when the budget timed it out) its heartbeat's. */
function lastDetails(err: ActivityFailure): { message: string | undefined; details: Details | undefined } {
  const cause = err.cause;
  if (!(cause instanceof TimeoutFailure)) {
    const failed =
      cause instanceof ApplicationFailure ? (cause.details?.[0] as Details | undefined) : undefined;
    return { message: cause?.message, details: failed };
  }
  const heartbeat = cause.lastHeartbeatDetails as Details | undefined;
  // The failure of the attempt before the timeout, when there was one. The SDK does not decode a timeout's cause
  // into `cause`; the server's failure still carries it.
  const before = cause.failure?.cause;
  const payload = before?.applicationFailureInfo?.details?.payloads?.[0];
  const failed = payload ? defaultPayloadConverter.fromPayload<Details>(payload) : undefined;
  // The heartbeat is newer when the attempt that timed out was still waiting on the breaker.
  const details =
    heartbeat && (failed?.attempt ?? 0) <= (heartbeat.attempt ?? 0) ? { ...failed, ...heartbeat } : failed;
  return { message: before?.message ?? cause.message, details };
}

export function endingOf(err: ActivityFailure, policy: DispatchPolicy): CallEnding {
  const { message, details } = lastDetails(err);
  const httpStatus = details?.httpStatus ?? null;
  const last = message ?? err.message;
  if (policy.maxDurationMs === undefined) {
    // Executions started before the budget: a timed-out final attempt carries no details, yet used every attempt.
    return {
      error: last,
      httpStatus,
      retryCount: details?.attempt ?? policy.maxAttempts,
      maxRetries: policy.maxAttempts,
      budgetSpent: false,
    };
  }
  const cap = policy.attemptCap ?? 0;
  // A call still queued when its budget ended (every worker slot held by waiting attempts) made no attempt.
  const retryCount = details?.attempt ?? (err.cause instanceof TimeoutFailure ? 0 : 1);
  const base = { httpStatus, retryCount, maxRetries: cap };
  // Temporal gave up because the next attempt would start past the budget, or the budget's timeout fired.
  const spent =
    err.retryState === 'TIMEOUT' ||
    (err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_CLOSE');
  if (spent) {
    const budget = `retry budget of ${seconds(policy.maxDurationMs)} spent (RETRY_MAX_DURATION_MS)`;
    return { ...base, error: `${budget} after ${retryCount} attempt(s); last: ${last}`, budgetSpent: true };
  }
  if (err.retryState === 'MAXIMUM_ATTEMPTS_REACHED') {
    return { ...base, error: `RETRY_MAX_ATTEMPTS (${cap}) spent; last: ${last}`, budgetSpent: false };
  }
  return { ...base, error: last, budgetSpent: false };
}

function seconds(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 1000)} s`;
}
