/**
 * Reads a dispatch's attempt history (contract §6 `attempts`) back from Temporal: from the failure its call ended
 * with (the `ActivityTaskFailed` / `ActivityTaskTimedOut` event of its history), or from a pending call's last
 * failure and heartbeat. The dead letter and `dispatch status` both read it here.
 */
import { type Payload, defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import {
  type AttemptHistory,
  attemptError,
  attemptsMade,
  NO_OUTCOME,
  historyFrom,
  historyOfBeat,
  mergedHistory,
  withAttempt,
  emptyHistory,
} from '../contract/attempts';
import { type PostRunFailureDetails, holdableCall } from '../contract/workflow';

type Failure = temporal.api.failure.v1.IFailure;
type HistoryRequest = temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryReverseRequest;
type HistoryResponse = temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryReverseResponse;

function decode(payload: temporal.api.common.v1.IPayload | null | undefined): unknown {
  return payload ? defaultPayloadConverter.fromPayload(payload as Payload) : undefined;
}

/**
 * The history a call's failure holds: the failed attempt's details (the history with its own entry), or for a
 * timeout the last heartbeat (the timed-out attempt then shows as NO_OUTCOME) and the failure before it. A failure
 * written before histories were kept still gives its own attempt's entry.
 */
export function historyOfFailure(failure: Failure | null | undefined): AttemptHistory | undefined {
  if (!failure) return undefined;
  const details = decode(failure.applicationFailureInfo?.details?.payloads?.[0]) as
    Partial<PostRunFailureDetails> | undefined;
  let own = historyFrom(details);
  if (details && typeof details.attempt === 'number' && details.attempt > 0) {
    if (!own?.attempts.some((a) => a.attempt === details.attempt)) {
      own = withAttempt(own ?? emptyHistory(), {
        attempt: details.attempt,
        at: null,
        http_status: details.httpStatus ?? null,
        error: attemptError(failure.message ?? ''),
        duration_ms: null,
      });
    }
  }
  const beat = failure.timeoutFailureInfo?.lastHeartbeatDetails?.payloads?.[0];
  const fromBeat = beat ? historyOfBeat(decode(beat), Number.POSITIVE_INFINITY) : undefined;
  return mergedHistory(own, fromBeat, failure.cause ? historyOfFailure(failure.cause) : undefined);
}

/**
 * Pages of PAGE_SIZE events read at most: a dispatch execution has a dozen events, a reset one a few more, and one
 * held through a long pause a few thousand (a look every hour); these reach Temporal's own limit of 51,200.
 */
const MAX_PAGES = 60;
const PAGE_SIZE = 1_000;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export type ReadReverse = (req: HistoryRequest) => Promise<HistoryResponse>;

/** The newest event that `is` accepts, reading pages newest first until one does; undefined when none does. */
async function newestEvent(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
  is: (e: HistoryEvent) => boolean,
): Promise<HistoryEvent | undefined> {
  let found: HistoryEvent | undefined;
  await scanNewestFirst(getHistoryReverse, namespace, workflowId, runId, (e) => {
    if (is(e)) found = e;
    return found !== undefined;
  });
  return found;
}

/** Hands events to `visit`, newest first, page by page, until it returns true or the history ends. */
export async function scanNewestFirst(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
  visit: (e: HistoryEvent) => boolean,
): Promise<void> {
  let nextPageToken: Uint8Array | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await getHistoryReverse({
      namespace,
      execution: { workflowId, runId },
      maximumPageSize: PAGE_SIZE,
      nextPageToken,
    });
    if (res.history?.events?.some(visit)) return;
    if (!res.nextPageToken || res.nextPageToken.length === 0) return;
    nextPageToken = res.nextPageToken;
  }
}

export const failureOf = (e: HistoryEvent): Failure | null | undefined =>
  e.activityTaskFailedEventAttributes?.failure ?? e.activityTaskTimedOutEventAttributes?.failure;

/**
 * The history of the call an execution's last failed or timed-out activity left; undefined when it has none. Read
 * newest first, stopping at that event: only `postRun` attempts fail before the dead letter is scheduled (a
 * `deadLetter` that never succeeds never fails either: it has no attempt limit), so it is the call's.
 *
 * Read on while that history lacks attempts: fewer than `through` (the attempts made), or some without their outcome.
 * A call scheduled after a hold starts from the held failure's entries, and may not have them (a timeout in the
 * queue, a history it could not read); each older call's failure is merged in, entries with an outcome winning, until
 * none is missing, or the call scheduled next says the calls before it made fewer attempts than the first one
 * missing (an attempt that timed out, or whose worker was lost, has no outcome anywhere).
 */
export async function lastCallHistory(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
  through = 0,
): Promise<AttemptHistory | undefined> {
  let history: AttemptHistory | undefined;
  let newest = true;
  await scanNewestFirst(getHistoryReverse, namespace, workflowId, runId, (e) => {
    const failure = failureOf(e);
    // Every failure older than the newest is a call's that was held (by a held failure, or after its budget ran
    // out during a pause: contract/workflow.ts, BUDGET_SPENT_PAUSED_PATCH) and scheduled again.
    if (failure) {
      history = newest ? historyOfFailure(failure) : mergedHistory(history, historyOfFailure(failure));
      newest = false;
      return firstMissing(history, through) === undefined;
    }
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (newest || !scheduled) return false;
    const before = holdableCall(scheduled.activityId ?? '')?.attemptsBefore ?? 0;
    return (firstMissing(history, through) ?? Infinity) > before;
  });
  return history;
}

/** The first attempt up to `through` whose entry has no outcome or is not there; undefined when none is. */
function firstMissing(h: AttemptHistory | undefined, through: number): number | undefined {
  const unknown = (h?.attempts ?? []).filter((a) => a.error === NO_OUTCOME).map((a) => a.attempt);
  if (unknown.length > 0) return Math.min(...unknown);
  const made = h ? attemptsMade(h) : 0;
  return through > made ? made + 1 : undefined;
}

/** The failure the execution's last failed or timed-out call ended with (a held call's among them). */
export async function lastCallFailure(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
): Promise<Failure | undefined> {
  const failed = await newestEvent(getHistoryReverse, namespace, workflowId, runId, (e) => !!failureOf(e));
  return failed ? (failureOf(failed) ?? undefined) : undefined;
}

/**
 * For a completed dispatch: the attempt its call succeeded on and the failure of the attempt before it. Temporal
 * writes an activity's `ActivityTaskStarted` when the activity ends, with the attempt that ended it and the last
 * failure before it; the earlier attempts' entries lived in heartbeats, which a completed activity does not keep.
 * A completed execution's only activity is its call (a dead letter fails the execution), so the newest such event is
 * the call's.
 */
export async function completedCall(
  getHistoryReverse: ReadReverse,
  namespace: string,
  workflowId: string,
  runId: string,
): Promise<{ attempt: number; lastFailure: Failure | null } | undefined> {
  // The newest started call, then the event that scheduled it (older): a call scheduled after a hold counts its
  // attempts after those its activity id names (contract/workflow.ts).
  let started: temporal.api.history.v1.IActivityTaskStartedEventAttributes | undefined;
  let scheduled: temporal.api.history.v1.IActivityTaskScheduledEventAttributes | undefined;
  await scanNewestFirst(getHistoryReverse, namespace, workflowId, runId, (e) => {
    if (!started) started = e.activityTaskStartedEventAttributes ?? undefined;
    else scheduled = e.activityTaskScheduledEventAttributes ?? undefined;
    return scheduled !== undefined;
  });
  if (!started) return undefined;
  const before = holdableCall(scheduled?.activityId ?? '')?.attemptsBefore ?? 0;
  return { attempt: (started.attempt ?? 1) + before, lastFailure: started.lastFailure ?? null };
}
