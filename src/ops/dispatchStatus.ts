/**
 * `dispatch status`: where one dispatch stands, read from Temporal (the relay keeps no state of its own):
 * execution status, the pending `postRun` attempt with its last failure and HTTP status, the next retry, a hold
 * while the tenant is paused, the result or the failure, and the Web UI link.
 */
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { workflowId } from '../contract';
import {
  type AttemptEntry,
  attemptsMade,
  emptyHistory,
  historyOfBeat,
  mergedHistory,
  throughAttempt,
} from '../contract/attempts';
import { heldAfterBudget } from '../temporal/budgetHold';
import { completedCall, historyOfFailure, lastCallFailure, lastCallHistory } from '../temporal/callAttempts';
import {
  type BreakerWaitDetails,
  type DispatchResult,
  type PostRunFailureDetails,
  TENANT_PAUSED,
  type TenantHeldDetails,
  holdableCall,
} from '../contract/workflow';

export interface DispatchStatus {
  tenant: string;
  dispatch_key: string;
  workflow_id: string;
  found: boolean;
  run_id: string | null;
  status: string | null;
  started_at: string | null;
  closed_at: string | null;
  attempt: number | null;
  max_attempts: number | null;
  last_error: string | null;
  http_status: number | null;
  next_retry_at: string | null;
  activity_state: string | null;
  /** The running attempt is held back by the worker's circuit breaker (the runs API is down). */
  waiting_on_breaker: boolean | null;
  breaker_open_since: string | null;
  /** When the retry budget ends (executions started with one), and the seconds left of it. */
  budget_ends_at: string | null;
  budget_left_s: number | null;
  result: DispatchResult | null;
  /**
   * The attempts made so far, oldest first (contract §6 `attempts`; the running attempt is `attempt`). A dispatch
   * that completed shows none: its failed attempts are not kept past its success (Temporal keeps a call's
   * heartbeat only while it runs); `attempt` is the one it succeeded on, `last_error` the failure before it.
   */
  attempts: AttemptEntry[];
  attempts_omitted: number;
  /** The call is held while its tenant is paused (contract §7): since when, and why. */
  held: { paused_since: string; reason: string | null } | null;
  web_ui: string;
}

/** The activities that make the runs API call (workflows/index.ts schedules one of them per execution). */
const CALL_ACTIVITIES = new Set(['postRun', 'postRunWithInputBytes', 'postRunReadingInput']);

function iso(ts: { seconds?: unknown; nanos?: number | null } | null | undefined): string | null {
  if (!ts || ts.seconds === undefined || ts.seconds === null) return null;
  // seconds is a protobuf Long (or number); its decimal string is exact either way.
  return new Date(Number(String(ts.seconds)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

/** A call attempt's failure as `last_error` and `http_status` (in its details when the API answered). */
function failureFields(
  failure: temporal.api.failure.v1.IFailure,
): Pick<DispatchStatus, 'last_error' | 'http_status'> {
  const payload = failure.applicationFailureInfo?.details?.payloads?.[0];
  return {
    last_error: failure.message ?? null,
    http_status: payload
      ? (defaultPayloadConverter.fromPayload<PostRunFailureDetails>(payload).httpStatus ?? null)
      : null,
  };
}

/** The details of a held call's failure; undefined for any other. */
function heldDetails(failure: temporal.api.failure.v1.IFailure | undefined): TenantHeldDetails | undefined {
  const info = failure?.applicationFailureInfo;
  const payload = info?.details?.payloads?.[0];
  if (info?.type !== TENANT_PAUSED || !payload) return undefined;
  return defaultPayloadConverter.fromPayload<TenantHeldDetails>(payload);
}

/**
 * A call held after its budget ran out during a pause (src/temporal/budgetHold.ts): the pause from the execution's
 * newest look, the attempts and last status from the calls' failures.
 */
async function heldAfterBudgetOf(
  client: Client,
  namespace: string,
  id: string,
  runId: string,
): Promise<TenantHeldDetails | undefined> {
  const read = (req: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryReverseRequest) =>
    client.workflowService.getWorkflowExecutionHistoryReverse(req);
  const held = await heldAfterBudget(read, namespace, id, runId);
  if (!held) return undefined;
  // Read on through the calls before; the last call's id says how many they made (it may have made none itself).
  const history = await lastCallHistory(read, namespace, id, runId, held.attemptsBefore);
  const made = Math.max(history ? attemptsMade(history) : 0, held.attemptsBefore);
  const newest = history?.attempts.at(-1);
  return { ...held.pause, attempt: made, httpStatus: newest?.http_status ?? null };
}

export async function dispatchStatus(
  client: Client,
  uiUrl: string,
  namespace: string,
  tenant: string,
  key: string,
): Promise<DispatchStatus> {
  const id = workflowId(tenant, key);
  const base: DispatchStatus = {
    tenant,
    dispatch_key: key,
    workflow_id: id,
    found: false,
    run_id: null,
    status: null,
    started_at: null,
    closed_at: null,
    attempt: null,
    max_attempts: null,
    last_error: null,
    http_status: null,
    next_retry_at: null,
    activity_state: null,
    waiting_on_breaker: null,
    breaker_open_since: null,
    budget_ends_at: null,
    budget_left_s: null,
    result: null,
    attempts: [],
    attempts_omitted: 0,
    held: null,
    web_ui: `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(id)}`,
  };
  const handle = client.workflow.getHandle(id);
  let desc;
  try {
    desc = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return base;
    throw err;
  }
  const status: DispatchStatus = {
    ...base,
    found: true,
    run_id: desc.runId,
    status: desc.status.name,
    started_at: desc.startTime.toISOString(),
    closed_at: desc.closeTime?.toISOString() ?? null,
    web_ui: `${base.web_ui}/${desc.runId}`,
  };
  const pending = desc.raw.pendingActivities?.[0];
  if (pending) {
    // A call scheduled after a hold counts its attempts after those of the calls before it.
    const before = holdableCall(pending.activityId ?? '')?.attemptsBefore ?? 0;
    const attempt = (pending.attempt ?? 1) + before;
    status.attempt = pending.attempt ? attempt : null;
    status.max_attempts = pending.maximumAttempts ? pending.maximumAttempts + before : null;
    // The raw describe carries the enum as its number.
    const state =
      typeof pending.state === 'number'
        ? temporal.api.enums.v1.PendingActivityState[pending.state]
        : String(pending.state ?? '');
    status.activity_state = state?.replace('PENDING_ACTIVITY_STATE_', '') || null;
    status.next_retry_at = iso(pending.nextAttemptScheduleTime);
    const budgetEnd = iso(pending.expirationTime);
    if (budgetEnd) {
      status.budget_ends_at = budgetEnd;
      status.budget_left_s = Math.max(0, Math.round((Date.parse(budgetEnd) - Date.now()) / 1000));
    }
    const beat = pending.heartbeatDetails?.payloads?.[0];
    const wait = beat ? defaultPayloadConverter.fromPayload<Partial<BreakerWaitDetails>>(beat) : undefined;
    // Details outlive their attempt: only the running attempt's own say whether it waits now.
    const running = status.activity_state === 'STARTED' && wait?.attempt === attempt;
    status.waiting_on_breaker = running && wait?.waitingOnBreaker === true;
    status.breaker_open_since = status.waiting_on_breaker ? (wait?.openSince ?? null) : null;
    const failure = pending.lastFailure;
    if (CALL_ACTIVITIES.has(pending.activityType?.name ?? '')) {
      // `attempt` is the running attempt, or the next one while a retry waits: the history holds those before it.
      const history = mergedHistory(historyOfBeat(wait, attempt), historyOfFailure(failure));
      Object.assign(status, throughAttempt(history ?? emptyHistory(), attempt - 1));
    }
    if (failure) Object.assign(status, failureFields(failure));
  }
  if (desc.status.name === 'COMPLETED') {
    status.result = (await handle.result()) as DispatchResult;
    // The attempt it succeeded on and what the one before it answered; the list of a completed call is not kept.
    const call = await completedCall(
      (req) => client.workflowService.getWorkflowExecutionHistoryReverse(req),
      namespace,
      id,
      desc.runId,
    );
    if (call) {
      status.attempt = call.attempt;
      if (call.lastFailure) Object.assign(status, failureFields(call.lastFailure));
    }
  }
  if (desc.status.name === 'FAILED') {
    try {
      await handle.result();
    } catch (err) {
      if (err instanceof WorkflowFailedError && err.cause) {
        status.last_error = err.cause.message;
        const details =
          err.cause instanceof ApplicationFailure
            ? (err.cause.details?.[0] as { http_status?: number; retry_count?: number } | undefined)
            : undefined;
        status.http_status = details?.http_status ?? null;
        status.attempt = details?.retry_count ?? null;
      }
    }
  }
  // The call is over (the dead letter is being written, or the execution failed): its history is in the failure it
  // ended with. A completed call keeps none.
  const callPending = desc.raw.pendingActivities?.some((p) =>
    CALL_ACTIVITIES.has(p.activityType?.name ?? ''),
  );
  if (!callPending && desc.status.name !== 'COMPLETED') {
    const last = await lastCallFailure(
      (req) => client.workflowService.getWorkflowExecutionHistoryReverse(req),
      namespace,
      id,
      desc.runId,
    );
    const heldBy =
      desc.status.name === 'RUNNING'
        ? (heldDetails(last) ?? (await heldAfterBudgetOf(client, namespace, id, desc.runId)))
        : undefined;
    if (heldBy) {
      status.held = { paused_since: heldBy.pausedAt, reason: heldBy.reason ?? null };
      status.attempt = heldBy.attempt;
      status.http_status = heldBy.httpStatus ?? null;
      status.last_error = last?.message ?? null;
    }
    const made = desc.status.name === 'FAILED' ? (status.attempt ?? 0) : (heldBy?.attempt ?? 0);
    // A failed call scheduled after a hold may not hold the attempts before it: read on to the held failure then.
    const history =
      desc.status.name === 'FAILED'
        ? await lastCallHistory(
            (req) => client.workflowService.getWorkflowExecutionHistoryReverse(req),
            namespace,
            id,
            desc.runId,
            made,
          )
        : historyOfFailure(last);
    Object.assign(status, throughAttempt(history ?? emptyHistory(), made));
  }
  return status;
}
