/**
 * One `postRun` attempt with its entry in the attempt history (./attemptLog): the attempt heartbeats the history,
 * and a failed attempt that may be the last carries it in its failure's details, so the dead letter has it when
 * retries end. The wrapper of every `postRun` activity, around whatever the attempt does (./runsApiCall). A call an
 * execution may hold (contract/workflow.ts, TENANT_HOLD_PATCH) numbers its attempts after those of the calls before
 * it, and ends held, without an attempt, while its tenant is paused.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { TemporalFailure } from '@temporalio/common';
import {
  type BreakerWaitDetails,
  type DispatchResult,
  type PostRunFailureDetails,
  TENANT_PAUSED,
  type TenantHeldDetails,
  holdableCall,
} from '../contract/workflow';
import type { AttemptHistory } from '../contract/attempts';
import type { TenantPause } from '../contract/tenantPause';
import { AttemptLog, mayBeFinal } from './attemptLog';
import type { AttemptContext } from './breakerGate';
import type { ActivityDeps } from './deps';

/** The pause that holds an attempt; thrown where the attempt would call, caught below. */
class Held extends Error {
  constructor(readonly pause: TenantPause) {
    super(`tenant ${pause.tenant} is paused`);
  }
}

type Info = Context['info'];

/** The attempt as the execution counts it: after the `attemptsBefore` of its earlier calls. */
function countedInfo(info: Info, attemptsBefore: number): Info {
  return attemptsBefore === 0 ? info : { ...info, attempt: info.attempt + attemptsBefore };
}

/** The failure that ends a held call: what was made before it, and the pause (no attempt of its own). */
function heldFailure(pause: TenantPause, attempt: number, history: AttemptHistory): ApplicationFailure {
  const last = history.attempts[history.attempts.length - 1];
  const details: TenantHeldDetails = {
    httpStatus: last?.attempt === attempt ? last.http_status : null,
    attempt,
    pausedAt: pause.at,
    reason: pause.reason,
    ...history,
  };
  const why = pause.reason ? ` (${pause.reason})` : '';
  return ApplicationFailure.create({
    type: TENANT_PAUSED,
    message: `held: tenant ${pause.tenant} is paused since ${pause.at}${why}`,
    nonRetryable: true,
    details: [details],
  });
}

export type HoldDeps = Pick<ActivityDeps, 'tenantPause' | 'callHistory' | 'logger'>;

/** `work` as one attempt with its entry in the history: whatever it throws is recorded. */
export async function recordedAttempt(
  deps: HoldDeps,
  tenant: string,
  work: (attemptCtx: AttemptContext, onCall: () => void) => Promise<DispatchResult>,
): Promise<DispatchResult> {
  const ctx = Context.current();
  const call = holdableCall(ctx.info.activityId);
  const info = countedInfo(ctx.info, call?.attemptsBefore ?? 0);
  // A call scheduled again after a hold starts without a heartbeat: the history so far is in the held failure,
  // read until an attempt of this call has heartbeated it. Unreadable (Temporal busy), the attempt goes on: the
  // earlier attempts then show without their outcome, counted all the same.
  const wf = ctx.info.workflowExecution;
  const prior =
    call && call.attemptsBefore > 0 && ctx.info.heartbeatDetails === undefined && wf
      ? await deps.callHistory(wf.workflowId, wf.runId).catch((err: unknown) => {
          deps.logger.warn(
            { workflow_id: wf.workflowId, err: err instanceof Error ? err.message : String(err) },
            'attempt history before the hold not readable; its attempts show without their outcome',
          );
          return undefined;
        })
      : undefined;
  const log = new AttemptLog(info, Date.now(), prior);
  const holdIfPaused = () => {
    const pause = call ? deps.tenantPause(tenant) : undefined;
    if (pause) throw new Held(pause);
  };
  const attemptCtx: AttemptContext = {
    info,
    cancellationSignal: ctx.cancellationSignal,
    // An attempt waiting on the breaker heartbeats as it waits: a pause meanwhile ends the wait, held. (The call's
    // schedule-to-close runs on at the server; a wait to the budget's end would spend it.)
    heartbeat: (details?: unknown) => {
      holdIfPaused();
      ctx.heartbeat(log.beat(details as BreakerWaitDetails | undefined));
    },
  };
  let called = false;
  try {
    holdIfPaused();
    return await work(attemptCtx, () => {
      // Looked at again here: the attempt may have waited on the breaker since it began.
      holdIfPaused();
      called = true;
      log.calling(Date.now());
      // A retry names itself as it calls, so a worker lost mid-call leaves the attempt's start behind (an attempt
      // the breaker refuses never calls, and writes nothing more than its outcome). So does the first attempt of a
      // call scheduled again after a hold: its heartbeat is where the history so far lives from now on.
      if (info.attempt > 1) ctx.heartbeat(log.beat());
    });
  } catch (err) {
    if (err instanceof Held) throw heldFailure(err.pause, info.attempt - 1, log.before());
    const failure = err instanceof ApplicationFailure ? err : undefined;
    // An attempt that made no call (the breaker held it, or it had nothing to send) has no HTTP status of its own.
    const status = called
      ? ((failure?.details?.[0] as PostRunFailureDetails | undefined)?.httpStatus ?? null)
      : null;
    const history = log.failed(status, err instanceof Error ? err.message : String(err), Date.now());
    ctx.heartbeat(log.settled());
    // Paused while this attempt was out: it counts, and the call is held rather than retried (a retry Temporal would
    // make past the budget's end would otherwise end the dispatch while its tenant is paused). Not the attempt
    // that reaches the cap: that one ends the call as it would have.
    const retryable = failure
      ? !failure.nonRetryable
      : err instanceof Error && !(err instanceof TemporalFailure);
    const cap = ctx.info.retryPolicy?.maximumAttempts ?? 0;
    const pause =
      call && retryable && !(cap > 0 && ctx.info.attempt >= cap) ? deps.tenantPause(tenant) : undefined;
    if (pause) throw heldFailure(pause, info.attempt, history);
    // The history rides in the failure only when it may be the last (attemptLog.ts, mayBeFinal). An unexpected
    // error (not a Temporal failure: those, a cancellation among them, go as they are) then becomes a retryable
    // application failure, so that the history reaches the dead letter. Asked with this call's own attempt and
    // cap: Temporal's backoff starts again with each call.
    if (!mayBeFinal(ctx.info, failure ?? {}, Date.now())) throw err;
    if (failure) throw withHistory(failure, history);
    if (err instanceof TemporalFailure || !(err instanceof Error)) throw err;
    throw withHistory(
      ApplicationFailure.create({
        type: err.name,
        message: err.message,
        details: [{ httpStatus: null, attempt: info.attempt } satisfies PostRunFailureDetails],
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
