/**
 * Holding a dispatch's call while its tenant is paused (contract/workflow.ts, TENANT_HOLD_PATCH; docs/design.md,
 * "Pausing a tenant"): what the execution's calls have used of the budget and the attempts, the wait for the resume,
 * and the options of the call scheduled after it. Workflow code: imports only @temporalio/workflow and pure shapes.
 */
import {
  type ActivityFailure,
  type ActivityOptions,
  ApplicationFailure,
  condition,
  defineSignal,
  isCancellation,
  log,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
} from '@temporalio/workflow';
import type { RelayActivities } from '../activities';
import {
  TENANT_PAUSED,
  TENANT_RESUMED_SIGNAL,
  type TenantHeldDetails,
  type TenantHoldState,
  holdableCallId,
} from '../contract/workflow';

export const tenantResumed = defineSignal(TENANT_RESUMED_SIGNAL);

/** A held execution looks again this long after the hold, then twice as long each time it finds the tenant paused. */
const LOOK_AGAIN_FIRST_MS = 10_000;
/**
 * The longest wait between looks: a resume that no signal announced is noticed within this. Each look is a local
 * activity and a timer (about six history events): a pause of a month adds some 4,500 to a held execution.
 */
const LOOK_AGAIN_MAX_MS = 60 * 60_000;

/**
 * The look: the worker's answer from the pause topic it follows, without a task on any queue. It answers from memory;
 * one that fails anyway is retried briefly, inside the workflow task, then counts as "still paused" until the next.
 */
const { tenantPauseOf } = proxyLocalActivities<RelayActivities>({
  startToCloseTimeout: '5s',
  scheduleToCloseTimeout: '15s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});
/**
 * A pause's `at` is the clock of the host that wrote it, the budget's end the workflow's: a pause written this much
 * after the end still holds a call whose budget the server ended (the server's end is later than the workflow's).
 */
const PAUSE_CLOCK_TOLERANCE_MS = 1_000;
/** A call scheduled after a hold gets at least this long, however little of the budget the pause left. */
const MIN_CALL_MS = 1_000;

/** The pause a call ended held by; undefined for any other failure. */
export function heldBy(err: ActivityFailure): TenantHeldDetails | undefined {
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure) || cause.type !== TENANT_PAUSED) return undefined;
  return cause.details?.[0] as TenantHeldDetails | undefined;
}

/**
 * One execution's holds. The budget runs only while a call is scheduled and the tenant is not paused: a held call
 * gives back the time from the pause (its record's `at`) to the hold, and the hold itself costs nothing.
 */
export class CallHold {
  holds = 0;
  /** The attempts the execution's calls made before the current one. */
  attemptsBefore = 0;
  private resumed = false;
  private callStartedAt: number;

  constructor(
    private budgetLeftMs: number,
    private readonly tenant: string,
  ) {
    this.callStartedAt = Date.now();
    setHandler(tenantResumed, () => {
      this.resumed = true;
    });
  }

  /** When the current call's budget ends (what the dead letter waits for). */
  get budgetEndsAt(): number {
    return this.callStartedAt + this.budgetLeftMs;
  }

  /**
   * The call ended held: counts what it used, then waits until the tenant is resumed — woken by the resume signal
   * or at its next look, each time asking the worker (`tenantPauseOf`) whether the tenant is still paused.
   */
  async hold(held: TenantHeldDetails): Promise<void> {
    const now = Date.now();
    const pausedAt = Date.parse(held.pausedAt);
    const ran = Number.isFinite(pausedAt) ? pausedAt - this.callStartedAt : now - this.callStartedAt;
    this.budgetLeftMs -= Math.min(Math.max(ran, 0), now - this.callStartedAt);
    this.attemptsBefore = Math.max(this.attemptsBefore, held.attempt);
    this.holds += 1;
    // Each hold starts from the first wait, also one by the pause a look just saw over (a worker behind on the pauses
    // held the call again): a long pause's hour between looks must not outlive it.
    let lookMs = LOOK_AGAIN_FIRST_MS;
    let pause: TenantHoldState | null = held;
    while (pause) {
      const why = pause.reason ? ` (${pause.reason})` : '';
      const text =
        `held: tenant ${this.tenant} is paused since ${pause.pausedAt}${why}; ${this.attemptsBefore} attempt(s) ` +
        `made, ${Math.max(0, Math.round(this.budgetLeftMs / 1000))} s of the budget left`;
      setCurrentDetails(text);
      const signalled = await condition(() => this.resumed, lookMs, { summary: text });
      this.resumed = false;
      lookMs = signalled ? LOOK_AGAIN_FIRST_MS : Math.min(lookMs * 2, LOOK_AGAIN_MAX_MS);
      pause = await this.look(pause);
    }
    setCurrentDetails('');
    this.callStartedAt = Date.now();
  }

  /**
   * The call's budget ran out at the server: the tenant's pause when it is paused now and was paused before the
   * budget ended (the budget stops at a pause), null otherwise. A look that fails answers null: the dead letter
   * then goes as it would have without the look.
   */
  async pausedBeforeBudgetEnd(): Promise<TenantHoldState | null> {
    try {
      const pause = await tenantPauseOf(this.tenant);
      return pause && Date.parse(pause.pausedAt) < this.budgetEndsAt + PAUSE_CLOCK_TOLERANCE_MS
        ? pause
        : null;
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('the look at the tenant pause at the budget end failed; the call is dead-lettered', {
        tenant: this.tenant,
        error: err instanceof Error ? err.message : String(err),
      });
      return null;
    }
  }

  /** The tenant's pause now, by the worker's answer; `before` (still held) when the look failed. */
  private async look(before: TenantHoldState): Promise<TenantHoldState | null> {
    try {
      return await tenantPauseOf(this.tenant);
    } catch (err) {
      // The execution cancelled: the wait that follows ends it, without a warning of a look that did not fail.
      if (isCancellation(err)) return before;
      log.warn('the look at the tenant pause failed; the call stays held until the next look', {
        tenant: this.tenant,
        error: err instanceof Error ? err.message : String(err),
      });
      return before;
    }
  }

  /** The options of the next call: the budget and attempts left, and the id that numbers its attempts on. */
  nextCall(options: ActivityOptions, attemptCap: number | undefined): ActivityOptions {
    const leftMs = Math.max(this.budgetLeftMs, MIN_CALL_MS);
    const retry = { ...options.retry };
    if (attemptCap) retry.maximumAttempts = Math.max(1, attemptCap - this.attemptsBefore);
    return {
      ...options,
      scheduleToCloseTimeout: leftMs,
      startToCloseTimeout: leftMs,
      retry,
      activityId: holdableCallId(this.holds, this.attemptsBefore),
    };
  }
}
