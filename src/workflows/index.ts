/**
 * The `dispatch` workflow (SPEC §4): one durable call of POST /v1/runs with Temporal-managed retries; when
 * they run out, or the API refuses the dispatch for good, a dead letter is published and the execution fails
 * so it shows as Failed in the Web UI (and can be replayed: the id reuse policy allows a new run after a
 * failure only).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RelayActivities } from '../activities';
import {
  DEFAULT_DISPATCH_POLICY,
  DISPATCH_FAILED,
  type DispatchInput,
  type DispatchResult,
  type PostRunFailureDetails,
  RUNS_API_REJECTED,
} from './types';

export type { DispatchInput, DispatchResult } from './types';

// Publishing a dead letter must eventually succeed (Kafka may be down for a while): no attempt limit.
const { deadLetter } = proxyActivities<RelayActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

export async function dispatch(input: DispatchInput): Promise<DispatchResult> {
  const policy = { ...DEFAULT_DISPATCH_POLICY, ...input.policy };
  const { postRun } = proxyActivities<RelayActivities>({
    // The HTTP timeout inside the activity fires first; this bound only catches a worker that died mid-call.
    startToCloseTimeout: policy.attemptTimeoutMs + 5_000,
    retry: {
      initialInterval: policy.initialIntervalMs,
      backoffCoefficient: policy.backoff,
      maximumInterval: policy.maxIntervalMs,
      maximumAttempts: policy.maxAttempts,
      nonRetryableErrorTypes: [RUNS_API_REJECTED],
    },
  });

  try {
    return await postRun({
      tenant: input.tenant,
      dispatch: input.dispatch,
      ...(input.traceparent ? { traceparent: input.traceparent } : {}),
      attemptTimeoutMs: policy.attemptTimeoutMs,
      recordTimestampMs: Number(input.source.timestamp),
    });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause;
    const details = (cause instanceof ApplicationFailure ? cause.details?.[0] : undefined) as
      PostRunFailureDetails | undefined;
    const error = cause?.message ?? err.message;
    const httpStatus = details?.httpStatus ?? null;
    // A timed-out final attempt carries no details; it still used every attempt it was allowed.
    const retryCount = details?.attempt ?? policy.maxAttempts;
    await deadLetter({
      tenant: input.tenant,
      dispatch: input.dispatch,
      source: input.source,
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
