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
import { TENANT_PAUSED, type TenantHoldState } from '../contract/workflow';
import { type ReadReverse, failureOf, scanNewestFirst } from './callAttempts';

type Marker = temporal.api.history.v1.IMarkerRecordedEventAttributes;

function decoded<T>(payload: temporal.api.common.v1.IPayload | null | undefined): T | undefined {
  try {
    return payload ? defaultPayloadConverter.fromPayload<T>(payload as Payload) : undefined;
  } catch {
    return undefined;
  }
}

/** A look's answer: the pause (null: not paused); undefined for any other marker. */
function lookAnswer(m: Marker): TenantHoldState | null | undefined {
  if (m.markerName !== 'core_local_activity') return undefined;
  const meta = decoded<{ activity_type?: string }>(m.details?.data?.payloads?.[0]);
  if (meta?.activity_type !== 'tenantPauseOf') return undefined;
  return decoded<TenantHoldState | null>(m.details?.result?.payloads?.[0]) ?? null;
}

/**
 * The pause a running execution's call is held by after its budget ran out; undefined when it is not so held (a
 * call scheduled since, a call that ended held by a held failure, no look since, or a newest look that found the
 * tenant resumed).
 */
export async function heldAfterBudget(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
): Promise<TenantHoldState | undefined> {
  let newestLook: TenantHoldState | null | undefined;
  let endedHeld = false;
  await scanNewestFirst(getHistoryReverse, namespace, workflowId, runId, (e) => {
    const failure = failureOf(e);
    if (e.activityTaskScheduledEventAttributes || failure) {
      endedHeld = failure?.applicationFailureInfo?.type === TENANT_PAUSED;
      return true;
    }
    const marker = e.markerRecordedEventAttributes;
    if (marker && newestLook === undefined) newestLook = lookAnswer(marker);
    return false;
  });
  return !endedHeld && newestLook ? newestLook : undefined;
}
