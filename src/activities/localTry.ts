/**
 * The local-first call (contract: LOCAL_FIRST_PATCH): `postRunLocalTry`, the first attempt run as a local activity
 * inside the workflow task, and `postRunAfterLocalTry`, the durable call that follows a local try that did not
 * succeed. The durable call's first attempt stands for the local try: it reports the try's outcome as its own
 * (its entry in the attempt history, its HTTP status, its Retry-After) without calling again, so attempt numbers,
 * the attempts cap, the history, `dispatch status` and the dead letter read exactly as when attempt 1 was durable.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { msToNumber } from '@temporalio/common/lib/time';
import { type AttemptHistory, attemptError, emptyHistory, withAttempt } from '../contract/attempts';
import type {
  DispatchResult,
  FirstTry,
  FirstTryFailure,
  LocalTryOutcome,
  PostRunFailureDetails,
  PostRunHeadInput,
} from '../contract/workflow';
import { AttemptLog, mayBeFinal } from './attemptLog';
import type { AttemptContext } from './breakerGate';
import type { ActivityDeps } from './deps';

type CallOnce = (
  input: PostRunHeadInput,
  inputText: Uint8Array,
  ctx: AttemptContext,
  onCall: () => void,
) => Promise<DispatchResult>;

export function createLocalTry(
  deps: ActivityDeps,
  callOnce: CallOnce,
  postRun: (input: PostRunHeadInput, inputText: Uint8Array) => Promise<DispatchResult>,
) {
  /**
   * One attempt of the call as a local activity. A failed call is returned with its history entry, not thrown; a
   * try that makes no call (a breaker not closed, or calls paced by RUNS_API_MAX_RPS) returns neither result nor
   * failure, and the durable call then runs as it does without a local try. A local activity cannot heartbeat.
   */
  async function postRunLocalTry(input: PostRunHeadInput, inputText: Uint8Array): Promise<LocalTryOutcome> {
    if (!deps.gate.allowsLocalTry(input.tenant)) return {};
    const ctx = Context.current();
    const log = new AttemptLog({ attempt: 1, heartbeatDetails: undefined }, Date.now());
    const attemptCtx: AttemptContext = {
      info: ctx.info,
      cancellationSignal: ctx.cancellationSignal,
      heartbeat: () => undefined,
    };
    let called = false;
    try {
      const result = await callOnce(input, inputText, attemptCtx, () => {
        called = true;
        log.calling(Date.now());
      });
      return { result };
    } catch (err) {
      // The breaker opened between the check and the call: no call was made.
      if (!called) return {};
      const failure = err instanceof ApplicationFailure ? err : undefined;
      const httpStatus = (failure?.details?.[0] as PostRunFailureDetails | undefined)?.httpStatus ?? null;
      const message = err instanceof Error ? err.message : String(err);
      const { attempts } = log.failed(httpStatus, message, Date.now());
      const delay = failure?.nextRetryDelay == null ? undefined : msToNumber(failure.nextRetryDelay);
      return {
        failure: {
          type: failure?.type ?? (err instanceof Error ? err.name : 'Error'),
          message,
          httpStatus,
          nonRetryable: failure?.nonRetryable ?? false,
          ...(delay !== undefined ? { retryAfterMs: delay } : {}),
          attempts,
        },
      };
    }
  }

  /**
   * The durable call after a local try. Its first attempt, when the try made a call, is the try: it heartbeats the
   * try's entry (the next attempt's AttemptLog reads it from there) and fails as the try failed. Every other
   * attempt, and the first one after a try that made no call, is an ordinary `postRun` attempt.
   */
  async function postRunAfterLocalTry(
    input: PostRunHeadInput,
    inputText: Uint8Array,
    firstTry: FirstTry,
  ): Promise<DispatchResult> {
    const ctx = Context.current();
    if (ctx.info.attempt !== 1 || !firstTry.failure) return postRun(input, inputText);
    throw reportedFailure(ctx, firstTry.failure);
  }

  return { postRunLocalTry, postRunAfterLocalTry };
}

/** The local try's outcome as attempt 1's failure, its history heartbeated (and carried when it may be final). */
function reportedFailure(ctx: Context, tried: FirstTryFailure): ApplicationFailure {
  const history: AttemptHistory = tried.attempts?.length
    ? { attempts: tried.attempts, attempts_omitted: 0 }
    : withAttempt(emptyHistory(), {
        attempt: 1,
        at: tried.startedAt ?? null,
        http_status: tried.httpStatus,
        error: attemptError(tried.message),
        duration_ms: null,
      });
  ctx.heartbeat({ ...history });
  // Already capped by the try at the policy's maximum interval (its retry policy carries the same one).
  const delayMs = tried.nonRetryable || !(tried.retryAfterMs! > 0) ? undefined : tried.retryAfterMs;
  const failure = { nonRetryable: tried.nonRetryable, nextRetryDelay: delayMs };
  const details: PostRunFailureDetails = { httpStatus: tried.httpStatus, attempt: 1 };
  return ApplicationFailure.create({
    type: tried.type,
    message: tried.message,
    nonRetryable: tried.nonRetryable,
    details: [mayBeFinal(ctx.info, failure, Date.now()) ? { ...details, ...history } : details],
    ...(delayMs !== undefined ? { nextRetryDelay: delayMs } : {}),
  });
}
