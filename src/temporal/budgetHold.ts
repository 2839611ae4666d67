/**
 * A call held after its budget ran out at the server during a pause (contract/workflow.ts,
 * BUDGET_SPENT_PAUSED_PATCH), read back from the execution's history for `dispatch status`. Such a hold has no held
 * failure: the call ended with its budget spent, then the execution looked at the pause (`tenantPauseOf` local
 * activities, whose answers the history keeps in their markers) and waits. The patch's marker is written once per
 * execution, so a second such hold is known by its looks alone: only this path looks after a call's end that is
 * not a held failure.
 */
import { type Payload, defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { TENANT_PAUSED, type TenantHoldState, holdableCall } from '../contract/workflow';
import { type ReadReverse, failureOf, scanNewestFirst } from './callAttempts';

type Marker = temporal.api.history.v1.IMarkerRecordedEventAttributes;

function decoded<T>(payload: temporal.api.common.v1.IPayload | null | undefined): T | undefined {
  try {
    return payload ? defaultPayloadConverter.fromPayload<T>(payload as Payload) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A look's answer: the pause (null: not paused); undefined for any other marker, and for a look that failed (it has
 * no answer, and the execution counts it as still paused: the look before it says the pause).
 */
function lookAnswer(m: Marker): TenantHoldState | null | undefined {
  if (m.markerName !== 'core_local_activity' || m.failure) return undefined;
  const meta = decoded<{ activity_type?: string }>(m.details?.data?.payloads?.[0]);
  if (meta?.activity_type !== 'tenantPauseOf') return undefined;
  return decoded<TenantHoldState | null>(m.details?.result?.payloads?.[0]) ?? null;
}

/** Such a hold: the pause the newest look found, and the attempts the calls before the last one made. */
export interface BudgetHold {
  pause: TenantHoldState;
  /** From the last call's activity id (contract/workflow.ts, `holdableCallId`); 0 for the first call. */
  attemptsBefore: number;
}

/**
 * The hold a running execution's call is in after its budget ran out; undefined when it is not so held (a call
 * scheduled since, a call that ended held by a held failure, no look since, or a newest look that found the tenant
 * resumed).
 */
export async function heldAfterBudget(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
): Promise<BudgetHold | undefined> {
  let newestLook: TenantHoldState | null | undefined;
  let ended: 'held' | 'spent' | undefined;
  let attemptsBefore = 0;
  await scanNewestFirst(getHistoryReverse, namespace, workflowId, runId, (e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (ended) {
      // Older than the call's end: the event that scheduled that call.
      if (scheduled) attemptsBefore = holdableCall(scheduled.activityId ?? '')?.attemptsBefore ?? 0;
      return !!scheduled;
    }
    if (scheduled) return true;
    const failure = failureOf(e);
    if (failure) {
      ended = failure.applicationFailureInfo?.type === TENANT_PAUSED ? 'held' : 'spent';
      return ended === 'held';
    }
    const marker = e.markerRecordedEventAttributes;
    if (marker && newestLook === undefined) newestLook = lookAnswer(marker);
    return false;
  });
  return ended === 'spent' && newestLook ? { pause: newestLook, attemptsBefore } : undefined;
}
