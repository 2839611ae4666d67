/**
 * The `dispatch` workflow (contract §4): one durable call of POST /v1/runs with Temporal-managed retries; when
 * they run out, or the API refuses the dispatch for good, a dead letter is published and the execution fails
 * so it shows as Failed in the Web UI (and can be replayed: the id reuse policy allows a new run after a
 * failure only).
 */
import {
  type ActivityOptions,
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { RelayActivities } from '../activities';
import {
  DEFAULT_DISPATCH_POLICY,
  DISPATCH_FAILED,
  type DispatchInput,
  LARGE_INPUT_BYTES,
  LARGE_INPUT_QUEUE_PATCH,
  POST_RUN_BY_SHAPE_PATCH,
  largeInputTaskQueue,
  type DispatchResult,
  type PostRunFailureDetails,
  RUNS_API_REJECTED,
} from './types';

export type { DispatchInput, DispatchResult } from './types';

// Publishing a dead letter must eventually succeed (Kafka may be down for a while): no attempt limit.
const deadLetterWithin = (timeoutMs = 60_000) =>
  proxyActivities<RelayActivities>({
    startToCloseTimeout: timeoutMs,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
  }).deadLetter;

export async function dispatch(input: DispatchInput): Promise<DispatchResult> {
  const policy = { ...DEFAULT_DISPATCH_POLICY, ...input.policy };
  const { tenant, source } = input;
  const dispatchKey = input.dispatch.dispatch_key;
  const callOptions: ActivityOptions = {
    // The HTTP timeout inside the activity fires first; this bound only catches a worker that died mid-call.
    startToCloseTimeout: policy.attemptTimeoutMs + 5_000,
    retry: {
      initialInterval: policy.initialIntervalMs,
      backoffCoefficient: policy.backoff,
      maximumInterval: policy.maxIntervalMs,
      maximumAttempts: policy.maxAttempts,
      nonRetryableErrorTypes: [RUNS_API_REJECTED],
    },
  };
  const activities = proxyActivities<RelayActivities>(callOptions);

  // Scheduling encodes the activity's arguments at once; after that the execution, cached between its
  // workflow tasks for as long as the call is retried, needs none of the input (a dead letter reads it back
  // from the start event). Dropped from the argument object itself, which the SDK also references.
  const call = scheduleCall(activities, callOptions, input, policy.attemptTimeoutMs);
  (input as { dispatch?: unknown }).dispatch = undefined;
  try {
    return await call;
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause;
    const details = (cause instanceof ApplicationFailure ? cause.details?.[0] : undefined) as
      PostRunFailureDetails | undefined;
    const error = cause?.message ?? err.message;
    const httpStatus = details?.httpStatus ?? null;
    // A timed-out final attempt carries no details; it still used every attempt it was allowed.
    const retryCount = details?.attempt ?? policy.maxAttempts;
    await deadLetterWithin(policy.deadLetterTimeoutMs)({
      tenant,
      dispatchKey,
      source,
      error,
      httpStatus,
      retryCount,
      maxRetries: policy.maxAttempts,
      workflowId: workflowInfo().workflowId,
      workflowRunId: workflowInfo().runId,
    });
    throw ApplicationFailure.create({
      type: DISPATCH_FAILED,
      message: `dead-lettered after ${retryCount} attempt(s): ${error}`,
      nonRetryable: true,
      details: [{ http_status: httpStatus, retry_count: retryCount, max_retries: policy.maxAttempts }],
      cause,
    });
  }
}

/**
 * Schedules `postRun` with the input's text as bytes (a binary payload: off the JavaScript heap in the activity,
 * where up to POIMEN_WORKER_MAX_ACTIVITIES calls hold theirs at once). Executions started before `input_json`
 * pass their parsed input as they always did.
 */
function scheduleCall(
  { postRun, postRunWithInputBytes }: Pick<RelayActivities, 'postRun' | 'postRunWithInputBytes'>,
  callOptions: ActivityOptions,
  input: DispatchInput,
  attemptTimeoutMs: number,
): Promise<DispatchResult> {
  const { dispatch } = input;
  const common = {
    tenant: input.tenant,
    ...(input.traceparent ? { traceparent: input.traceparent } : {}),
    attemptTimeoutMs,
    recordTimestampMs: Number(input.source.timestamp),
  };
  if (!('input_json' in dispatch)) return postRun({ ...common, dispatch });
  const { workflow_ref, goal_id, dispatch_key } = dispatch;
  const encoded = new TextEncoder().encode(dispatch.input_json);
  // The sandbox's own Uint8Array: the payload converter recognises binary data by `instanceof`.
  const bytes = new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  const head = { ...common, dispatch: { workflow_ref, goal_id, dispatch_key } };
  // Executions recorded before the patch scheduled `postRun(head, bytes)` and must replay as they ran.
  if (!patched(POST_RUN_BY_SHAPE_PATCH)) return postRun(head, bytes);
  // A large input is not scheduled at all (the SDK core would keep it while the execution is cached): the call
  // reads it from the start event, on its own queue with few slots, so memory is bounded by bytes there.
  // Executions recorded before the patch, and small inputs, keep the main queue and carry their bytes.
  if (bytes.byteLength > LARGE_INPUT_BYTES && patched(LARGE_INPUT_QUEUE_PATCH)) {
    const large = proxyActivities<RelayActivities>({
      ...callOptions,
      taskQueue: largeInputTaskQueue(workflowInfo().taskQueue),
    });
    return large.postRunReadingInput(head);
  }
  return postRunWithInputBytes(head, bytes);
}
