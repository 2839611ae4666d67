/**
 * Where a `postRun` attempt meets the worker's circuit breaker: before its call (wait while the breaker is open,
 * heartbeating, unless this attempt is the probe) and after it (count the answer).
 */
import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import {
  type BreakerWaitDetails,
  type PostRunFailureDetails,
  RUNS_API_UNAVAILABLE,
} from '../workflows/types';
import { CIRCUIT_STATE_VALUE, CircuitBreaker } from './breaker';
import type { Classification, RunsApiAnswer } from './classify';

/** How often a waiting attempt heartbeats (the SDK sends at most one per 0.8 × its heartbeat timeout). */
const WAIT_TICK_MS = 5_000;
/**
 * A waiting attempt gives up this long before its budget ends, so its failure (with the last HTTP status) reaches
 * the server before the budget's timeout does.
 */
const GIVE_UP_BEFORE_BUDGET_MS = 1_000;
/** Attempts released together after a close spread their retries over this, through the task queue's rate limit. */
const RELEASE_SPREAD_MS = 1_000;

export interface BreakerGate {
  /** Resolves when this attempt may call: true when it is the probe. Throws when it should not call at all. */
  enter(ctx: Context, attemptTimeoutMs: number): Promise<boolean>;
  record(verdict: Classification, answer: RunsApiAnswer, cancelled: boolean, probe: boolean): void;
  /** The worker is shutting down: waiting attempts end now (retryable) rather than at the grace time. */
  releaseWaiters(): void;
}

export interface BreakerGateOptions {
  failures: number;
  probeIntervalMs: number;
  /** RUNS_API_MAX_RPS is set: calls released by a close go back through Temporal's task-queue rate limit. */
  paced: boolean;
}

/**
 * The latest time an attempt may wait, or 0 when it may not wait at all: attempts scheduled without a heartbeat
 * timeout (executions started before the budget, whose start-to-close fits one HTTP call), and attempts under an
 * attempts cap (RETRY_MAX_ATTEMPTS > 0: waiting would hold the cap back for as long as the outage lasts).
 */
export function waitLimitMs(info: Context['info'], attemptTimeoutMs: number, nowMs: number): number {
  if (!info.heartbeatTimeoutMs || (info.retryPolicy?.maximumAttempts ?? 0) > 0) return 0;
  const budgetEnd =
    info.scheduleToCloseTimeoutMs > 0
      ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - GIVE_UP_BEFORE_BUDGET_MS
      : Infinity;
  const attemptEnd = nowMs + info.startToCloseTimeoutMs - attemptTimeoutMs - GIVE_UP_BEFORE_BUDGET_MS;
  return Math.max(0, Math.min(budgetEnd, attemptEnd));
}

export function createBreakerGate(
  opts: BreakerGateOptions,
  metrics: RelayMetrics,
  logger: Logger,
): BreakerGate {
  const breaker = new CircuitBreaker({
    failures: opts.failures,
    probeIntervalMs: opts.probeIntervalMs,
    onState: (state) => {
      metrics.circuitState.set(CIRCUIT_STATE_VALUE[state]);
      const last = breaker.lastFailure;
      if (state === 'open')
        logger.warn({ circuit: state, last: last?.reason }, 'runs API circuit breaker open');
      else if (state === 'closed') logger.info({ circuit: state }, 'runs API circuit breaker closed');
    },
  });
  metrics.circuitState.set(0);
  const openSince = () => (breaker.openedAt === undefined ? null : new Date(breaker.openedAt).toISOString());
  const unavailable = (attempt: number) => {
    const last = breaker.lastFailure;
    return ApplicationFailure.create({
      type: RUNS_API_UNAVAILABLE,
      message: `runs API unavailable (circuit breaker open since ${openSince()}); last: ${last?.reason ?? 'n/a'}`,
      details: [{ httpStatus: last?.httpStatus ?? null, attempt } satisfies PostRunFailureDetails],
    });
  };

  return {
    async enter(ctx, attemptTimeoutMs) {
      const admission = breaker.admit();
      if (admission !== 'wait') return admission === 'probe';
      const { attempt } = ctx.info;
      const limit = waitLimitMs(ctx.info, attemptTimeoutMs, Date.now());
      if (limit <= Date.now()) {
        // An attempt that may not wait ends now with the outage's last failure, without a call: its retries, and
        // with them its attempts cap, advance as if it had called.
        throw unavailable(attempt);
      }
      const details = (): BreakerWaitDetails => ({
        waitingOnBreaker: true,
        openSince: openSince(),
        httpStatus: breaker.lastFailure?.httpStatus ?? null,
        attempt,
      });
      metrics.breakerWaiting.inc();
      let end;
      try {
        end = await breaker.wait(limit, ctx.cancellationSignal, () => ctx.heartbeat(details()), WAIT_TICK_MS);
      } finally {
        metrics.breakerWaiting.dec();
      }
      // `dispatch status` reads the latest heartbeat: this attempt no longer waits.
      if (end !== 'limit') ctx.heartbeat({ ...details(), waitingOnBreaker: false });
      if (end === 'probe') return true;
      if (end === 'limit') throw unavailable(attempt);
      if (!opts.paced) return false;
      // Every waiting attempt calling at once would pass RUNS_API_MAX_RPS: a retry is dispatched by the server
      // within the task queue's rate limit.
      throw ApplicationFailure.create({
        type: RUNS_API_UNAVAILABLE,
        message: 'runs API recovered; the call is retried within RUNS_API_MAX_RPS',
        details: [{ httpStatus: null, attempt } satisfies PostRunFailureDetails],
        nextRetryDelay: 1 + Math.floor(Math.random() * RELEASE_SPREAD_MS),
      });
    },

    releaseWaiters: () => breaker.releaseWaiters(),

    record(verdict, answer, cancelled, probe) {
      if (cancelled) breaker.record({ kind: 'abandoned' }, probe);
      else if (verdict.outcome !== 'retryable') breaker.record({ kind: 'healthy' }, probe);
      else {
        const reason = answer.kind === 'error' ? verdict.reason : `runs API answered ${verdict.httpStatus}`;
        breaker.record(
          {
            kind: 'outage',
            httpStatus: verdict.httpStatus,
            reason,
            ...(verdict.retryAfterMs === undefined ? {} : { retryAfterMs: verdict.retryAfterMs }),
          },
          probe,
        );
      }
    },
  };
}
