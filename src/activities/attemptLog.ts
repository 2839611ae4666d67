/**
 * Carries a dispatch's attempt history (contract §6 `attempts`) from one `postRun` attempt to the next, durably,
 * in the activity's heartbeat details: Temporal hands the last heartbeat of an attempt to the next attempt
 * (`info.heartbeatDetails`), keeps it through a worker crash, shows it in the Web UI's pending activity, and
 * reports it with a timeout. No store of the relay's own.
 *
 * An attempt that fails heartbeats the history with its own entry before it throws (the SDK core reports a failed
 * attempt together with its last heartbeat's details) and, when the failure may be the last (mayBeFinal), puts
 * the same history in its failure's details, which is what the execution keeps when the retries end. A retry (attempt 2 on) heartbeats as it sends its call, naming
 * itself `current`, so a worker killed mid-call leaves the attempt's start behind; a first attempt does not (every
 * dispatch would pay a write to Temporal for it) and, if lost, shows as a NO_OUTCOME entry without a time.
 */
import type { Context } from '@temporalio/activity';
import {
  type AttemptBeat,
  type AttemptEntry,
  type AttemptHistory,
  attemptError,
  emptyHistory,
  historyOfBeat,
  mergedHistory,
  throughAttempt,
  withAttempt,
} from '../contract/attempts';
import type { BreakerWaitDetails } from '../contract/workflow';

export class AttemptLog {
  private history: AttemptHistory;
  private readonly attempt: number;
  private startedAtMs: number;

  /** `prior`: the history a held execution's earlier calls made (the first attempt of a call scheduled again). */
  constructor(
    info: Pick<Context['info'], 'attempt' | 'heartbeatDetails'>,
    nowMs: number,
    prior?: AttemptHistory,
  ) {
    this.attempt = info.attempt;
    // A history the previous attempts left, with any number it lacks as NO_OUTCOME (worker lost, or no record).
    this.history = throughAttempt(
      mergedHistory(prior, historyOfBeat(info.heartbeatDetails, info.attempt)) ?? emptyHistory(),
      info.attempt - 1,
    );
    this.startedAtMs = nowMs;
  }

  /** The history before this attempt (what a held call carries: the held attempt is not one). */
  before(): AttemptHistory {
    return this.history;
  }

  /**
   * The heartbeat of this attempt: the history so far, this attempt as `current`, and the breaker's state when it
   * waits. Only a breaker wait names `attempt` at the top level: the workflow counts a timed-out call's attempts
   * from it (workflows/ending.ts), and a call that has not waited must count as it always did.
   */
  beat(wait?: BreakerWaitDetails): AttemptBeat & Partial<BreakerWaitDetails> {
    return {
      ...wait,
      ...this.history,
      current: { attempt: this.attempt, at: new Date(this.startedAtMs).toISOString() },
    };
  }

  /** The call is sent now: the entry's time and duration are the call's, not the wait before it. */
  calling(nowMs: number): void {
    this.startedAtMs = nowMs;
  }

  /** This attempt failed: its entry joins the history, which the returned heartbeat carries on. */
  failed(httpStatus: number | null, error: string, nowMs: number): AttemptHistory {
    const entry: AttemptEntry = {
      attempt: this.attempt,
      at: new Date(this.startedAtMs).toISOString(),
      http_status: httpStatus,
      error: attemptError(error),
      duration_ms: Math.max(0, Math.round(nowMs - this.startedAtMs)),
    };
    this.history = withAttempt(this.history, entry);
    return this.history;
  }

  /** The heartbeat after the outcome: no `current`, this attempt's entry is in the history. */
  settled(): AttemptBeat {
    return { ...this.history };
  }
}

/** The next attempt must start this far before the budget's end to count as a retry Temporal will still make. */
const FINAL_MARGIN_MS = 2_000;

/**
 * Whether Temporal may make no further attempt after this failure: it is non-retryable, the attempts cap is
 * reached, or the next retry would start at the budget's end. Only such a failure carries the whole history in
 * its details. A retryable one must stay small: the server keeps a retry's failure only up to 4 KiB
 * (`limit.mutableStateActivityFailureSize.error`) and otherwise replaces it by "Failure exceeds size limit.",
 * which `dispatch status`, the Web UI and a timeout's count read; the heartbeat carries the history there. When
 * in doubt (a policy it cannot read), the history goes in: the dead letter needs it.
 */
export function mayBeFinal(
  info: Pick<
    Context['info'],
    'attempt' | 'retryPolicy' | 'scheduledTimestampMs' | 'scheduleToCloseTimeoutMs'
  >,
  failure: { nonRetryable?: boolean | null; nextRetryDelay?: unknown },
  nowMs: number,
): boolean {
  if (failure.nonRetryable) return true;
  const policy = info.retryPolicy;
  if (!policy) return true;
  if ((policy.maximumAttempts ?? 0) > 0 && info.attempt >= policy.maximumAttempts!) return true;
  if (!(info.scheduleToCloseTimeoutMs > 0)) return false;
  const { initialInterval, backoffCoefficient = 2, maximumInterval } = policy;
  let delayMs: number;
  if (typeof failure.nextRetryDelay === 'number') delayMs = failure.nextRetryDelay;
  else if (typeof initialInterval === 'number') {
    delayMs = initialInterval * backoffCoefficient ** (info.attempt - 1);
    if (typeof maximumInterval === 'number') delayMs = Math.min(delayMs, maximumInterval);
  } else return true;
  return nowMs + delayMs + FINAL_MARGIN_MS >= info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs;
}
