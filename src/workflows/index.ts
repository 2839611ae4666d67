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
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { RelayActivities } from '../activities';
import { endingOf } from './ending';
import { CallHold, heldBy } from './hold';
import {
  BREAKER_HEARTBEAT_MARGIN_MS,
  BUDGET_END_WAIT_PATCH,
  BUDGET_SPENT_PAUSED_PATCH,
  DEAD_LETTER_QUEUE_PATCH,
  DEFAULT_DISPATCH_POLICY,
  type DispatchPolicy,
  deadLetterTaskQueue,
  DISPATCH_FAILED,
  type DispatchInput,
  LARGE_INPUT_BYTES,
  LARGE_INPUT_QUEUE_PATCH,
  POST_RUN_BY_SHAPE_PATCH,
  largeInputTaskQueue,
  type DispatchResult,
  type DeadLetterInput,
  holdableCallId,
  type PostRunHeadInput,
  RUNS_API_REJECTED,
  TENANT_HOLD_PATCH,
  type TenantHeldDetails,
} from '../contract/workflow';

export type { DispatchInput, DispatchResult } from '../contract/workflow';

// Publishing a dead letter must eventually succeed (Kafka may be down for a while): no attempt limit.
function deadLetterWithin(timeoutMs = 60_000) {
  const options: ActivityOptions = {
    startToCloseTimeout: timeoutMs,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
  };
  // Executions recorded before the patch scheduled their dead letter on the dispatch queue and replay so.
  if (patched(DEAD_LETTER_QUEUE_PATCH)) options.taskQueue = deadLetterTaskQueue(workflowInfo().taskQueue);
  return proxyActivities<RelayActivities>(options).deadLetter;
}

/**
 * The call's options. An execution started with a budget (`maxDurationMs` in its input) is bounded by time: the
 * schedule-to-close timeout is the budget, the attempt may wait on the worker's circuit breaker (so a long
 * start-to-close, with a heartbeat timeout to notice a dead worker), and the count limit is `attemptCap`. Earlier
 * executions keep the options they were scheduled with.
 */
function callOptionsOf(policy: DispatchPolicy): ActivityOptions {
  const retry = {
    initialInterval: policy.initialIntervalMs,
    backoffCoefficient: policy.backoff,
    maximumInterval: policy.maxIntervalMs,
    nonRetryableErrorTypes: [RUNS_API_REJECTED],
  };
  if (policy.maxDurationMs === undefined) {
    // The HTTP timeout inside the activity fires first; this bound only catches a worker that died mid-call.
    return {
      startToCloseTimeout: policy.attemptTimeoutMs + 5_000,
      retry: { ...retry, maximumAttempts: policy.maxAttempts },
    };
  }
  return {
    scheduleToCloseTimeout: policy.maxDurationMs,
    startToCloseTimeout: policy.maxDurationMs,
    heartbeatTimeout: policy.attemptTimeoutMs + BREAKER_HEARTBEAT_MARGIN_MS,
    // No count limit is "unset" to the SDK (it refuses 0).
    retry: policy.attemptCap ? { ...retry, maximumAttempts: policy.attemptCap } : retry,
  };
}

/**
 * The workflow's clock reads its first task's start, a little before the server schedules the call; a second more
 * keeps the dead letter after the server's own budget end.
 */
const BUDGET_END_MARGIN_MS = 1_000;

export async function dispatch(input: DispatchInput): Promise<DispatchResult> {
  const policy = { ...DEFAULT_DISPATCH_POLICY, ...input.policy };
  const { tenant, source } = input;
  const dispatchKey = input.dispatch.dispatch_key;
  // Executions started with a budget hold their call while the tenant is paused (./hold.ts); those recorded before
  // the patch schedule it under the SDK's own activity id and never hold.
  const hold =
    policy.maxDurationMs !== undefined && patched(TENANT_HOLD_PATCH)
      ? new CallHold(policy.maxDurationMs, tenant)
      : undefined;
  // The Web UI names the pending call by its summary (user metadata: not part of what a replay compares). The
  // tenant only: its characters are restricted, a dispatch_key's are not (the execution's summary shows the key).
  const callOptions: ActivityOptions = {
    ...callOptionsOf(policy),
    summary: `POST /v1/runs · ${tenant}`,
    ...(hold ? { activityId: holdableCallId(0, 0) } : {}),
  };
  const firstAttemptAt = Date.now();

  // Scheduling encodes the activity's arguments at once; after that the execution, cached between its
  // workflow tasks for as long as the call is retried, needs none of the input (a dead letter reads it back
  // from the start event). Dropped from the argument object itself, which the SDK also references.
  const first = scheduleCall(callOptions, input, policy.attemptTimeoutMs);
  (input as { dispatch?: unknown }).dispatch = undefined;
  let call = first.result;
  for (;;) {
    try {
      return await call;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      const held = hold && (heldBy(err) ?? (await pausedWhenSpent(err, hold, policy)));
      if (held) {
        // A call scheduled again reads the input from the start event, as a large one always does.
        await hold.hold(held);
        const options = hold.nextCall(first.options, policy.attemptCap);
        call = proxyActivities<RelayActivities>(options).postRunReadingInput(first.head);
        continue;
      }
      const budgetEndsAt = hold?.budgetEndsAt ?? firstAttemptAt + (policy.maxDurationMs ?? 0);
      return deadLettered(err, { policy, input: { tenant, dispatchKey, source }, budgetEndsAt, hold });
    }
  }
}

/**
 * A call whose budget ran out at the server while its tenant was paused is held, not dead-lettered: the attempt
 * that would have brought the pause back did not run in time (docs/design.md, "Pausing a tenant"). Executions
 * recorded before the patch dead-letter it, and replay so.
 */
async function pausedWhenSpent(
  err: ActivityFailure,
  hold: CallHold,
  policy: DispatchPolicy,
): Promise<TenantHeldDetails | undefined> {
  const ending = endingOf(err, policy, hold.attemptsBefore);
  if (!ending.budgetSpent || !patched(BUDGET_SPENT_PAUSED_PATCH)) return undefined;
  // Every attempt the cap allows made: a call scheduled again would make one more.
  if (policy.attemptCap && ending.retryCount >= policy.attemptCap) return undefined;
  // Temporal gives up as soon as the next retry would start past the budget, which may be minutes before its end:
  // a pause until then still stops the budget, so the look waits for the end (the dead letter would wait as long).
  const leftMs = hold.budgetEndsAt + BUDGET_END_MARGIN_MS - Date.now();
  if (leftMs > 0) await sleep(leftMs);
  const pause = await hold.pausedBeforeBudgetEnd();
  return pause ? { ...pause, attempt: ending.retryCount, httpStatus: ending.httpStatus } : undefined;
}

/**
 * The call failed for good: the dead letter, then the execution fails so it shows as Failed in the Web UI. What was
 * counted before a hold counts here too.
 */
async function deadLettered(
  err: ActivityFailure,
  o: {
    policy: DispatchPolicy;
    input: Pick<DeadLetterInput, 'tenant' | 'source' | 'dispatchKey'>;
    budgetEndsAt: number;
    hold: CallHold | undefined;
  },
): Promise<never> {
  const ending = endingOf(err, o.policy, o.hold?.attemptsBefore ?? 0);
  // Temporal gives up as soon as the next retry would start past the budget; the dead letter still waits for
  // the budget's end, so "dead-lettered" always means the whole budget was given. Behind a patch: a worker of
  // the version before may have handled this failure (it dead-letters at once), and its history must replay.
  if (ending.budgetSpent && o.policy.maxDurationMs !== undefined && patched(BUDGET_END_WAIT_PATCH)) {
    const leftMs = o.budgetEndsAt + BUDGET_END_MARGIN_MS - Date.now();
    if (leftMs > 0) await sleep(leftMs);
  }
  const { error, httpStatus, retryCount, maxRetries } = ending;
  await deadLetterWithin(o.policy.deadLetterTimeoutMs)({
    ...o.input,
    error,
    httpStatus,
    retryCount,
    maxRetries,
    workflowId: workflowInfo().workflowId,
    workflowRunId: workflowInfo().runId,
  });
  throw ApplicationFailure.create({
    type: DISPATCH_FAILED,
    message: `dead-lettered after ${retryCount} attempt(s): ${error}`,
    nonRetryable: true,
    details: [{ http_status: httpStatus, retry_count: retryCount, max_retries: maxRetries || null }],
    cause: err.cause,
  });
}

/**
 * Schedules `postRun` with the input's text as bytes (a binary payload: off the JavaScript heap in the activity,
 * where up to POIMEN_WORKER_MAX_ACTIVITIES calls hold theirs at once). Executions started before `input_json`
 * pass their parsed input as they always did. Returns, besides the call, the options it was scheduled with (its
 * queue included) and the dispatch's head: what a call scheduled again after a hold needs.
 */
function scheduleCall(
  callOptions: ActivityOptions,
  input: DispatchInput,
  attemptTimeoutMs: number,
): { result: Promise<DispatchResult>; options: ActivityOptions; head: PostRunHeadInput } {
  const { postRun, postRunWithInputBytes } = proxyActivities<RelayActivities>(callOptions);
  const { dispatch } = input;
  const common = {
    tenant: input.tenant,
    ...(input.traceparent ? { traceparent: input.traceparent } : {}),
    attemptTimeoutMs,
    recordTimestampMs: Number(input.source.timestamp),
  };
  const { workflow_ref, goal_id, dispatch_key } = dispatch;
  const head = { ...common, dispatch: { workflow_ref, goal_id, dispatch_key } };
  const scheduled = (result: Promise<DispatchResult>, options = callOptions) => ({ result, options, head });
  if (!('input_json' in dispatch)) return scheduled(postRun({ ...common, dispatch }));
  const encoded = new TextEncoder().encode(dispatch.input_json);
  // The sandbox's own Uint8Array: the payload converter recognises binary data by `instanceof`.
  const bytes = new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  // Executions recorded before the patch scheduled `postRun(head, bytes)` and must replay as they ran.
  if (!patched(POST_RUN_BY_SHAPE_PATCH)) return scheduled(postRun(head, bytes));
  // A large input is not scheduled at all (the SDK core would keep it while the execution is cached): the call
  // reads it from the start event, on its own queue with few slots, so memory is bounded by bytes there.
  // Executions recorded before the patch, and small inputs, keep the main queue and carry their bytes.
  if (bytes.byteLength > LARGE_INPUT_BYTES && patched(LARGE_INPUT_QUEUE_PATCH)) {
    const large = { ...callOptions, taskQueue: largeInputTaskQueue(workflowInfo().taskQueue) };
    return scheduled(proxyActivities<RelayActivities>(large).postRunReadingInput(head), large);
  }
  return scheduled(postRunWithInputBytes(head, bytes));
}
