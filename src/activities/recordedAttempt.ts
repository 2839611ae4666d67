/**
 * One `postRun` attempt with its entry in the attempt history (./attemptLog): the attempt heartbeats the history,
 * and a failed attempt that may be the last carries it in its failure's details, so the dead letter has it when
 * retries end. The wrapper of every `postRun` activity, around whatever the attempt does (./runsApiCall).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { TemporalFailure } from '@temporalio/common';
import type { BreakerWaitDetails, DispatchResult, PostRunFailureDetails } from '../contract/workflow';
import type { AttemptHistory } from '../contract/attempts';
import { AttemptLog, mayBeFinal } from './attemptLog';
import type { AttemptContext } from './breakerGate';

/** `work` as one attempt with its entry in the history: whatever it throws is recorded. */
export async function recordedAttempt(
  work: (attemptCtx: AttemptContext, onCall: () => void) => Promise<DispatchResult>,
): Promise<DispatchResult> {
  const ctx = Context.current();
  const log = new AttemptLog(ctx.info, Date.now());
  const attemptCtx: AttemptContext = {
    info: ctx.info,
    cancellationSignal: ctx.cancellationSignal,
    heartbeat: (details?: unknown) => ctx.heartbeat(log.beat(details as BreakerWaitDetails | undefined)),
  };
  let called = false;
  try {
    return await work(attemptCtx, () => {
      called = true;
      log.calling(Date.now());
      // A retry names itself as it calls, so a worker lost mid-call leaves the attempt's start behind (an attempt
      // the breaker refuses never calls, and writes nothing more than its outcome).
      if (ctx.info.attempt > 1) ctx.heartbeat(log.beat());
    });
  } catch (err) {
    const failure = err instanceof ApplicationFailure ? err : undefined;
    // An attempt that made no call (the breaker held it, or it had nothing to send) has no HTTP status of its own.
    const status = called
      ? ((failure?.details?.[0] as PostRunFailureDetails | undefined)?.httpStatus ?? null)
      : null;
    const history = log.failed(status, err instanceof Error ? err.message : String(err), Date.now());
    ctx.heartbeat(log.settled());
    // The history rides in the failure only when it may be the last (attemptLog.ts, mayBeFinal). An unexpected
    // error (not a Temporal failure: those, a cancellation among them, go as they are) then becomes a retryable
    // application failure, so that the history reaches the dead letter.
    if (!mayBeFinal(ctx.info, failure ?? {}, Date.now())) throw err;
    if (failure) throw withHistory(failure, history);
    if (err instanceof TemporalFailure || !(err instanceof Error)) throw err;
    throw withHistory(
      ApplicationFailure.create({
        type: err.name,
        message: err.message,
        details: [{ httpStatus: null, attempt: ctx.info.attempt } satisfies PostRunFailureDetails],
        cause: err,
      }),
      history,
    );
  }
}

/** The attempt's failure, its details carrying the attempt history (what the execution keeps when retries end). */
function withHistory(failure: ApplicationFailure, history: AttemptHistory): ApplicationFailure {
  const details = (failure.details?.[0] ?? {}) as Partial<PostRunFailureDetails>;
  return ApplicationFailure.create({
    type: failure.type ?? undefined,
    message: failure.message,
    nonRetryable: failure.nonRetryable ?? false,
    details: [{ ...details, ...history }],
    ...(failure.nextRetryDelay != null ? { nextRetryDelay: failure.nextRetryDelay } : {}),
    ...(failure.cause ? { cause: failure.cause } : {}),
  });
}
