/**
 * The local-first call of the `dispatch` workflow (LOCAL_FIRST_PATCH): the call's first attempt as a local activity
 * inside the first workflow task, so a dispatch whose first call succeeds completes in that one task; anything
 * else (a failed call, the try's own timeout, a try that made no call) continues on the durable call with the
 * time budget, breaker, attempt history, Retry-After and dead letter it always had. A worker lost during the try
 * fails the workflow task; the next worker runs the try again, and the API's dispatch_key dedup absorbs the
 * repeated call, as it does an activity retry's. Workflow code: imports only @temporalio/workflow and pure shapes.
 */
import {
  type ActivityOptions,
  ActivityFailure,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { RelayActivities } from '../activities';
import {
  type DispatchPolicy,
  type DispatchResult,
  type FirstTry,
  LOCAL_TRY_MARGIN_MS,
  type PostRunHeadInput,
} from '../contract/workflow';

export interface LocalFirstCall {
  head: PostRunHeadInput;
  bytes: Uint8Array;
  /** The durable call's options, as the workflow schedules it without a local try. */
  callOptions: ActivityOptions;
  policy: DispatchPolicy;
  /** The workflow clock at the first workflow task: where the retry budget starts. */
  firstAttemptAt: number;
}

export async function localFirstCall(call: LocalFirstCall): Promise<DispatchResult> {
  const { head, bytes, policy, firstAttemptAt } = call;
  const { postRunLocalTry } = proxyLocalActivities<RelayActivities>({
    // The HTTP timeout inside the try fires first; this bound only catches a try that hangs past it.
    startToCloseTimeout: policy.attemptTimeoutMs + LOCAL_TRY_MARGIN_MS,
    // One attempt: a failure continues on the durable call. The interval caps a Retry-After the try reports.
    retry: {
      maximumAttempts: 1,
      initialInterval: policy.initialIntervalMs,
      maximumInterval: policy.maxIntervalMs,
    },
    summary: `POST /v1/runs · ${head.tenant} · local try`,
  });
  let firstTry: FirstTry;
  try {
    const outcome = await postRunLocalTry(head, bytes);
    if (outcome.result) return outcome.result;
    firstTry = outcome.failure ? { failure: outcome.failure } : {};
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    // The try ran past its own timeout (or failed outside the call): a call may have been sent.
    const cause = err.cause;
    firstTry = {
      failure: {
        type: cause?.name ?? 'ActivityFailure',
        message: cause?.message ?? err.message,
        httpStatus: null,
        nonRetryable: false,
        startedAt: new Date(firstAttemptAt).toISOString(),
      },
    };
  }
  // The budget counts from the first attempt: the durable call has what the try left of it.
  const options: ActivityOptions =
    policy.maxDurationMs === undefined
      ? call.callOptions
      : {
          ...call.callOptions,
          scheduleToCloseTimeout: Math.max(1_000, policy.maxDurationMs - (Date.now() - firstAttemptAt)),
        };
  return proxyActivities<RelayActivities>(options).postRunAfterLocalTry(head, bytes, firstTry);
}
