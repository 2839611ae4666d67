/**
 * Where a `postRun` attempt meets the worker's circuit breaker: before its call (wait while the breaker is open,
 * heartbeating, unless this attempt is the probe) and after it (count the answer).
 */
import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { Logger } from '../logger';
import { RUNS_API } from '../config/vars/runsApi';
import type { RelayMetrics } from '../metrics';
import {
  type BreakerWaitDetails,
  type PostRunFailureDetails,
  RUNS_API_UNAVAILABLE,
} from '../contract/workflow';
import { type Admission, CIRCUIT_STATE_VALUE, type CallOutcome, CircuitBreaker } from './breaker';
import { type Classification, type RunsApiAnswer, neverReachedApi } from './classify';
import { ProbeTurns } from './probeTurns';

/** How often a waiting attempt heartbeats (the worker sends at most one per HEARTBEAT_THROTTLE_MS of them). */
const WAIT_TICK_MS = 5_000;
/**
 * A waiting attempt gives up this long before its budget ends, so its failure (with the last HTTP status) reaches
 * the server before the budget's timeout does.
 */
const GIVE_UP_BEFORE_BUDGET_MS = 1_000;
/** Attempts released together after a close spread their retries over this, through the task queue's rate limit. */
const RELEASE_SPREAD_MS = 1_000;

/** What the gate uses of an attempt's context (postRun wraps `heartbeat` so it carries the attempt history). */
export type AttemptContext = Pick<Context, 'info' | 'heartbeat' | 'cancellationSignal'>;

/** The probe tickets an attempt holds: of the worker's breaker, of its tenant's, or neither. */
export interface Pass {
  global?: number;
  tenant?: number;
}

export interface BreakerGate {
  /** Resolves when this attempt may call. Throws when it should not call at all (see `enter` below). */
  enter(ctx: AttemptContext, tenant: string, attemptTimeoutMs: number): Promise<Pass>;
  /**
   * Counts the call's answer. `maxHoldMs`: the attempt's maximum retry interval, the longest a Retry-After holds;
   * `startedMs`: when the call went out (performance.now()), which says whether another tenant was answered during it.
   */
  record(
    tenant: string,
    pass: Pass,
    call: {
      verdict: Classification;
      answer: RunsApiAnswer;
      cancelled: boolean;
      maxHoldMs?: number;
      startedMs?: number;
    },
  ): void;
  /** The attempt made no call after `enter` let it (it failed first): its probe tickets go back unused. */
  release(tenant: string, pass: Pass): void;
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
 * The latest time an attempt may wait, or 0 when it may not wait at all (attempts scheduled without a heartbeat
 * timeout: executions started before the budget, whose start-to-close fits one HTTP call). An attempt under an
 * attempts cap waits like any other: Temporal counts every attempt against RETRY_MAX_ATTEMPTS, so one that failed
 * without a call would spend the cap on its neighbours' failures.
 */
export function waitLimitMs(info: Context['info'], attemptTimeoutMs: number, nowMs: number): number {
  if (!info.heartbeatTimeoutMs) return 0;
  const budgetEnd =
    info.scheduleToCloseTimeoutMs > 0
      ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - GIVE_UP_BEFORE_BUDGET_MS
      : Infinity;
  const attemptEnd = nowMs + info.startToCloseTimeoutMs - attemptTimeoutMs - GIVE_UP_BEFORE_BUDGET_MS;
  return Math.max(0, Math.min(budgetEnd, attemptEnd));
}

/**
 * Answers that speak for one tenant only (its rate limit, its authorization) open that tenant's breaker, never the
 * worker's: one tenant throttled must not hold back the others. Everything else retryable is about the API, unless
 * the API answered another tenant while the call was out (see `ApiWitness`).
 */
const TENANT_STATUSES = new Set([429, 403]);

/**
 * Whether the runs API was answering other tenants while one tenant's call failed. A timeout, a 5xx or a reset of
 * one tenant's call while another tenant's call was answered healthy (a success, a 409, a refusal of the
 * dispatch's own) speaks for that tenant (its calls hang or fail at the API, the API is up), so it counts against
 * that tenant's breaker: one tenant's hanging calls must not open the worker's breaker and hold every tenant's
 * calls. A failure counts against the worker's breaker as before when no other tenant was answered healthy while
 * it was out, when another tenant has failed since the latest healthy answer (the API failing for two tenants is
 * the API's), or when the call never reached the API. A lone tenant's failures are therefore always the worker's.
 * A 429 or 403 is no witness: a gateway can answer them while everything behind it is down.
 *
 * O(1) per call whatever the number of tenants: the latest healthy answer, and the latest of a tenant other than
 * its one, say when any tenant but T was last answered; the first tenant to fail since and whether a second did
 * say whether T fails alone.
 */
class ApiWitness {
  private latest: { tenant: string; at: number } | undefined;
  /** The latest healthy answer of a tenant other than `latest`'s. */
  private otherLatest: { tenant: string; at: number } | undefined;
  private firstFailed: string | undefined;
  private twoFailed = false;

  constructor(private readonly now: () => number) {}

  answered(tenant: string): void {
    const at = this.now();
    if (this.latest && this.latest.tenant !== tenant) this.otherLatest = this.latest;
    this.latest = { tenant, at };
    this.firstFailed = undefined;
    this.twoFailed = false;
  }

  /** Records the failure; true when it speaks for `tenant` only (another tenant answered healthy during it). */
  failedAlone(tenant: string, startedMs: number | undefined): boolean {
    if (this.firstFailed === undefined) this.firstFailed = tenant;
    else if (this.firstFailed !== tenant) this.twoFailed = true;
    if (startedMs === undefined || this.twoFailed) return false;
    const other = this.latest?.tenant !== tenant ? this.latest : this.otherLatest;
    return other !== undefined && other.at > startedMs;
  }
}

export function createBreakerGate(
  opts: BreakerGateOptions,
  metrics: RelayMetrics,
  logger: Logger,
  now: () => number = () => performance.now(),
): BreakerGate {
  const witness = new ApiWitness(now);
  const turns = new ProbeTurns();
  const options = { failures: opts.failures, probeIntervalMs: opts.probeIntervalMs };
  const global: CircuitBreaker = new CircuitBreaker({
    ...options,
    onState: (state) => {
      if (state === 'closed') turns.reset();
      metrics.circuitState.set(CIRCUIT_STATE_VALUE[state]);
      const last = global.lastFailure;
      if (state === 'open')
        logger.warn({ circuit: state, last: last?.reason }, 'runs API circuit breaker open');
      else if (state === 'closed') logger.info({ circuit: state }, 'runs API circuit breaker closed');
    },
  });
  metrics.circuitState.set(0);
  const tenants = new Map<string, CircuitBreaker>();
  const tenantBreaker = (tenant: string): CircuitBreaker => {
    let b = tenants.get(tenant);
    if (!b) {
      const made: CircuitBreaker = new CircuitBreaker({
        ...options,
        onState: (state) => {
          if (state !== 'open') return;
          logger.warn({ tenant, last: made.lastFailure?.reason }, "a tenant's runs API circuit breaker open");
        },
      });
      tenants.set(tenant, (b = made));
    }
    return b;
  };
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  const unavailable = (b: CircuitBreaker, attempt: number) => {
    const last = b.lastFailure;
    return ApplicationFailure.create({
      type: RUNS_API_UNAVAILABLE,
      message: `runs API unavailable (circuit breaker open since ${iso(b.openedAt)}); last: ${last?.reason ?? 'n/a'}`,
      details: [{ httpStatus: last?.httpStatus ?? null, attempt } satisfies PostRunFailureDetails],
    });
  };
  const release = (tenant: string, pass: Pass): void => {
    global.record({ kind: 'abandoned' }, pass.global);
    tenantBreaker(tenant).record({ kind: 'abandoned' }, pass.tenant);
  };
  const ticket = (a: Admission) => (typeof a === 'object' ? a.probe : undefined);

  return {
    /**
     * While the worker's breaker or the tenant's is open, an attempt of a budgeted dispatch (capped or not) waits
     * here, heartbeating, until both let it call (or it is a probe); one that may not wait (see waitLimitMs) fails
     * at once without a call, with the outage's last failure.
     */
    async enter(ctx, tenant, attemptTimeoutMs) {
      const { attempt } = ctx.info;
      const own = tenantBreaker(tenant);
      let limit: number | undefined;
      let waiting = false;
      let onWorker = false;
      try {
        for (;;) {
          const g = turns.yields(tenant) ? 'wait' : global.admit();
          const t = g === 'wait' ? 'wait' : own.admit();
          const blocked = g === 'wait' ? global : t === 'wait' ? own : undefined;
          if ((blocked === global) !== onWorker) {
            onWorker = !onWorker;
            turns.waiting(tenant, onWorker ? 1 : -1);
          }
          if (!blocked) {
            const pass: Pass = {};
            if (ticket(g) !== undefined) pass.global = ticket(g);
            if (ticket(t) !== undefined) pass.tenant = ticket(t);
            if (!waiting) return pass;
            try {
              // `dispatch status` reads the latest heartbeat: this attempt no longer waits.
              ctx.heartbeat({ waitingOnBreaker: false, openSince: null, httpStatus: null, attempt });
            } catch (err) {
              // No call goes out: a probe ticket held here would keep its breaker half-open for good.
              release(tenant, pass);
              throw err;
            }
            if (!opts.paced || pass.global !== undefined || pass.tenant !== undefined) return pass;
            // Every waiting attempt calling at once would pass RUNS_API_MAX_RPS: a retry is dispatched by the
            // server within the task queue's rate limit.
            throw ApplicationFailure.create({
              type: RUNS_API_UNAVAILABLE,
              message: `runs API recovered; the call is retried within ${RUNS_API.RUNS_API_MAX_RPS.name}`,
              details: [{ httpStatus: null, attempt } satisfies PostRunFailureDetails],
              nextRetryDelay: 1 + Math.floor(Math.random() * RELEASE_SPREAD_MS),
            });
          }
          // A probe of the worker's breaker is not held while waiting on the tenant's: someone else takes it.
          if (typeof g === 'object') global.record({ kind: 'abandoned' }, g.probe);
          limit ??= waitLimitMs(ctx.info, attemptTimeoutMs, Date.now());
          if (!waiting) {
            if (limit <= Date.now()) throw unavailable(blocked, attempt);
            waiting = true;
            metrics.breakerWaiting.inc();
          }
          ctx.heartbeat({
            waitingOnBreaker: true,
            openSince: iso(blocked.openedAt),
            httpStatus: blocked.lastFailure?.httpStatus ?? null,
            attempt,
          } satisfies BreakerWaitDetails);
          if ((await blocked.pause(limit, ctx.cancellationSignal, WAIT_TICK_MS)) === 'limit') {
            throw unavailable(blocked, attempt);
          }
        }
      } finally {
        if (waiting) metrics.breakerWaiting.dec();
        if (onWorker) turns.waiting(tenant, -1);
      }
    },

    record(tenant, pass, { verdict, answer, cancelled, maxHoldMs, startedMs }) {
      const own = tenantBreaker(tenant);
      // A probe whose call was answered (or timed out) used the tenant's turn; one cancelled, or released without
      // a call, did not. Before the breaker counts it, whose close forgets the turns.
      if (pass.global !== undefined && !cancelled) turns.took(tenant);
      if (cancelled || verdict.outcome !== 'retryable') {
        const outcome = cancelled ? ({ kind: 'abandoned' } as const) : ({ kind: 'healthy' } as const);
        if (!cancelled) witness.answered(tenant);
        global.record(outcome, pass.global);
        own.record(outcome, pass.tenant);
        return;
      }
      const outage: CallOutcome = {
        kind: 'outage',
        httpStatus: verdict.httpStatus,
        reason: answer.kind === 'error' ? verdict.reason : `runs API answered ${verdict.httpStatus}`,
        ...(verdict.retryAfterMs === undefined ? {} : { retryAfterMs: verdict.retryAfterMs }),
      };
      if (verdict.httpStatus !== null && TENANT_STATUSES.has(verdict.httpStatus)) {
        // The API answered: it is up, whatever this tenant's limits say.
        global.record({ kind: 'healthy' }, pass.global);
        own.record(outage, pass.tenant, maxHoldMs);
      } else if (witness.failedAlone(tenant, neverReachedApi(answer) ? undefined : startedMs)) {
        // (A call that never reached the API is never one tenant's: the worker's connections are everyone's.)
        // The API answered another tenant while this call was out: the failure is this tenant's.
        global.record({ kind: 'abandoned' }, pass.global);
        own.record(outage, pass.tenant, maxHoldMs);
      } else {
        global.record(outage, pass.global, maxHoldMs);
        own.record({ kind: 'abandoned' }, pass.tenant);
      }
    },

    release,

    releaseWaiters: () => {
      global.releaseWaiters();
      for (const b of tenants.values()) b.releaseWaiters();
    },
  };
}
