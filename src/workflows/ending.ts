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
import type { BreakerWaitDetails, DispatchPolicy, PostRunFailureDetails } from '../contract/workflow';

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

const applicationDetails = (err: ActivityFailure): Details | undefined =>
  err.cause instanceof ApplicationFailure ? (err.cause.details?.[0] as Details | undefined) : undefined;

/**
 * The attempts a heartbeat names (contract/attempts.ts, `attemptsMade` and `historyOfBeat`, which workflow code may
 * not import): those its history lists, and the one beating (`current`: an attempt names itself as it sends). An
 * attempt also records its failure in a heartbeat before the failure reaches the server, so on a starved worker, or
 * one killed mid-call, the timeout's cause can be an attempt before the last one made.
 */
function attemptsListed(beat: unknown): number {
  const h = beat as { attempts?: unknown; attempts_omitted?: unknown; current?: unknown } | undefined;
  const number = (a: unknown) => (a as { attempt?: unknown } | null | undefined)?.attempt;
  const listed = Array.isArray(h?.attempts) ? h.attempts.map(number) : [];
  const numbers = [...listed, number(h?.current)].filter(
    (n): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n > 0,
  );
  const omitted = typeof h?.attempts_omitted === 'number' ? h.attempts_omitted : 0;
  return Math.max(0, listed.length + omitted, ...numbers);
}

/**
 * What the last attempt left when the call ended by a timeout: the failure of the attempt before it (the server
 * keeps it as the timeout's cause; the SDK does not decode it into `cause`) and its heartbeat, if it waited on
 * the breaker. A timed-out attempt that started (start-to-close, heartbeat) is itself one more attempt.
 */
function afterTimeout(
  timeout: TimeoutFailure,
  attemptsBefore: number,
): { message: string; details: Details } {
  const before = timeout.failure?.cause;
  const payload = before?.applicationFailureInfo?.details?.payloads?.[0];
  const failed = payload ? defaultPayloadConverter.fromPayload<Details>(payload) : undefined;
  const beat = timeout.lastHeartbeatDetails as Details | undefined;
  const ran = timeout.timeoutType === 'START_TO_CLOSE' || timeout.timeoutType === 'HEARTBEAT';
  const attempt = Math.max(
    beat?.attempt ?? 0,
    attemptsListed(timeout.lastHeartbeatDetails),
    (failed?.attempt ?? attemptsBefore) + (ran ? 1 : 0),
  );
  const newest = (beat?.attempt ?? 0) >= (failed?.attempt ?? 0) ? beat : failed;
  return {
    message: ran || !before?.message ? timeout.message : before.message,
    details: { httpStatus: newest?.httpStatus ?? failed?.httpStatus ?? null, attempt },
  };
}

/** `attemptsBefore`: the attempts of the calls before this one (a held execution's); its details count on from them. */
export function endingOf(err: ActivityFailure, policy: DispatchPolicy, attemptsBefore = 0): CallEnding {
  if (policy.maxDurationMs === undefined) {
    // Executions started before the budget end exactly as they always did: a timed-out final attempt carries no
    // details, yet used every attempt.
    const details = applicationDetails(err);
    return {
      error: err.cause?.message ?? err.message,
      httpStatus: details?.httpStatus ?? null,
      retryCount: details?.attempt ?? policy.maxAttempts,
      maxRetries: policy.maxAttempts,
      budgetSpent: false,
    };
  }
  const timedOut = err.cause instanceof TimeoutFailure ? afterTimeout(err.cause, attemptsBefore) : undefined;
  const details = timedOut?.details ?? applicationDetails(err);
  const last = timedOut?.message ?? err.cause?.message ?? err.message;
  // A call still queued when its budget ended (every worker slot held by waiting attempts) made no attempt.
  const retryCount = Math.max(details?.attempt ?? attemptsBefore + (timedOut ? 0 : 1), attemptsBefore);
  const httpStatus = details?.httpStatus ?? null;
  // Temporal gave up because the next attempt would start past the budget, or the budget's timeout fired: as
  // schedule-to-close, or as schedule-to-start for a call still queued (the server sets that one to the budget).
  const spent =
    err.retryState === 'TIMEOUT' ||
    (err.cause instanceof TimeoutFailure &&
      (err.cause.timeoutType === 'SCHEDULE_TO_CLOSE' || err.cause.timeoutType === 'SCHEDULE_TO_START'));
  if (spent) {
    const budget = `retry budget of ${seconds(policy.maxDurationMs)} spent (RETRY_MAX_DURATION_MS)`;
    return {
      httpStatus,
      retryCount,
      maxRetries: policy.attemptCap ?? 0,
      error: `${budget} after ${retryCount} attempt(s); last: ${last}`,
      budgetSpent: true,
    };
  }
  if (err.retryState === 'MAXIMUM_ATTEMPTS_REACHED') {
    // No cap of its own: a worker of the version before scheduled the call with the count made for it.
    const cap = policy.attemptCap || policy.maxAttempts;
    const what = policy.attemptCap ? 'RETRY_MAX_ATTEMPTS' : 'the attempt count derived from the budget';
    return {
      httpStatus,
      retryCount,
      maxRetries: cap,
      error: `${what} (${cap}) spent; last: ${last}`,
      budgetSpent: false,
    };
  }
  return { httpStatus, retryCount, maxRetries: policy.attemptCap ?? 0, error: last, budgetSpent: false };
}

function seconds(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 1000)} s`;
}
