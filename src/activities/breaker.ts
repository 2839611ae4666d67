/**
 * The worker's circuit breaker on the runs API, shared by every `postRun` attempt in the process.
 *
 * Why: during an outage thousands of dispatches would each keep calling a dead API, and every failed attempt is a
 * task through the Temporal server. With the breaker open, an attempt that starts does not call: it waits inside
 * itself (heartbeating), spending neither an attempt nor server tasks beyond its heartbeats, and one attempt per
 * probe interval goes out as the probe. docs/design.md "Riding out an outage" has the choice and its cost.
 *
 * No I/O here and an injected clock, so every transition is unit-tested (test/unit/breaker.test.ts).
 */

export type CircuitState = 'closed' | 'open' | 'half-open';

/** `poimen_runs_api_circuit_state` values (contract §7). */
export const CIRCUIT_STATE_VALUE: Record<CircuitState, number> = { closed: 0, open: 1, 'half-open': 2 };

/** The longest a Retry-After keeps the breaker open before the next probe (contract §5's maximum interval). */
const MAX_OPEN_MS = 5 * 60_000;

export interface BreakerOptions {
  /** Consecutive outage-class failures that open the breaker. */
  failures: number;
  /** While open, the time between probes. */
  probeIntervalMs: number;
  now?: () => number;
  onState?: (state: CircuitState) => void;
}

/** What ended a call, as the breaker counts it. */
export type CallOutcome =
  /** The API answered and is up: a success, 409, or a refusal that is the dispatch's fault. */
  | { kind: 'healthy' }
  /** Connect errors, timeouts, 5xx, 408/425/429, 401/403 (contract §5's retryable rows). */
  | { kind: 'outage'; httpStatus: number | null; reason: string; retryAfterMs?: number }
  /** The call never finished (the attempt was cancelled): says nothing about the API. */
  | { kind: 'abandoned' };

export interface LastFailure {
  httpStatus: number | null;
  reason: string;
  atMs: number;
}

/** `call`: go ahead; `probe`: go ahead as the one probe (its ticket goes back with `record`); `wait`: held back. */
export type Admission = 'call' | 'wait' | { probe: number };

/**
 * An open breaker that nobody has asked to call through for this long closes, one failure away from opening
 * again: an idle worker would otherwise report "open" for ever after the API came back. Attempts that fail at once
 * on an open breaker count as asking, so a busy worker's breaker never closes this way.
 */
const IDLE_CLOSE_MS = 60_000;

export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private consecutive = 0;
  private probeAtMs = 0;
  /** The ticket of the probe out now; results of any other ticket are counted as plain calls. */
  private probeOut: number | undefined;
  private tickets = 0;
  private openedAtMs: number | undefined;
  private askedAtMs = 0;
  private last: LastFailure | undefined;
  private readonly wakers = new Set<() => void>();
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private released = false;
  private readonly now: () => number;

  constructor(private readonly opts: BreakerOptions) {
    this.now = opts.now ?? Date.now;
  }

  get state(): CircuitState {
    return this.current;
  }

  /** When the breaker last opened (undefined while closed). */
  get openedAt(): number | undefined {
    return this.openedAtMs;
  }

  get lastFailure(): LastFailure | undefined {
    return this.last;
  }

  /** Decides for an attempt about to call. A probe's ticket must go back with `record`. */
  admit(): Admission {
    if (this.current === 'closed') return 'call';
    this.askedAtMs = this.now();
    if (this.probeOut === undefined && this.now() >= this.probeAtMs) {
      this.probeOut = ++this.tickets;
      this.set('half-open');
      return { probe: this.probeOut };
    }
    return 'wait';
  }

  /**
   * Counts a finished call. `probe`: its ticket when it was admitted as the probe. `maxHoldMs` caps how long a
   * Retry-After may hold the next probe back (the caller's maximum retry interval).
   */
  record(outcome: CallOutcome, probe?: number, maxHoldMs = MAX_OPEN_MS): void {
    // A probe that outlived its turn (the breaker closed and opened again meanwhile) is a plain call.
    const isProbe = probe !== undefined && probe === this.probeOut;
    if (isProbe) this.probeOut = undefined;
    if (outcome.kind === 'abandoned') {
      // The probe's turn passes to the next waiter at once; nothing was learnt about the API.
      if (isProbe && this.current === 'half-open') this.reopen(0);
      return;
    }
    if (outcome.kind === 'healthy') {
      this.consecutive = 0;
      if (this.current !== 'closed') {
        this.openedAtMs = undefined;
        this.probeOut = undefined;
        this.set('closed');
      }
      return;
    }
    this.consecutive += 1;
    this.last = { httpStatus: outcome.httpStatus, reason: outcome.reason, atMs: this.now() };
    const cap = Math.min(MAX_OPEN_MS, Math.max(this.opts.probeIntervalMs, maxHoldMs));
    const hold = Math.max(this.opts.probeIntervalMs, Math.min(outcome.retryAfterMs ?? 0, cap));
    if (isProbe) this.reopen(hold);
    else if (this.current === 'closed' && this.consecutive >= this.opts.failures) {
      this.openedAtMs = this.now();
      this.askedAtMs = this.now();
      this.reopen(hold);
    }
  }

  /**
   * One step of waiting while the breaker holds an attempt back: sleeps until the breaker changes, the next probe
   * is due, `tickMs` passes or `limitMs` (a time on the clock) comes; then the caller asks `admit` again. `limit`
   * when the limit has come or the waiters were released; an abort of `signal` rejects with its reason.
   */
  async pause(limitMs: number, signal: AbortSignal, tickMs: number): Promise<'again' | 'limit'> {
    signal.throwIfAborted();
    const now = this.now();
    if (this.released || now >= limitMs) return 'limit';
    // While a probe is out, its result wakes the waiters; else the next probe time does.
    const next =
      this.current === 'closed'
        ? now + 1
        : this.probeOut !== undefined
          ? now + tickMs
          : Math.max(this.probeAtMs, now + 1);
    await this.sleep(Math.min(limitMs, next, now + tickMs) - now, signal);
    signal.throwIfAborted();
    return this.released ? 'limit' : 'again';
  }

  /**
   * Ends every wait, now and later, as if its limit had come: a worker shutting down hands its waiting attempts
   * back to Temporal at once (another worker retries them) instead of holding its drain for the grace time.
   */
  releaseWaiters(): void {
    this.released = true;
    clearTimeout(this.idleTimer);
    for (const wake of [...this.wakers]) wake();
  }

  private reopen(holdMs: number): void {
    this.probeAtMs = this.now() + holdMs;
    this.set('open');
    this.watchIdle(holdMs + IDLE_CLOSE_MS);
  }

  private watchIdle(afterMs: number): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.current === 'closed' || this.released) return;
      const quietMs = this.now() - this.askedAtMs;
      if (this.wakers.size > 0 || this.probeOut !== undefined || quietMs < IDLE_CLOSE_MS) {
        this.watchIdle(Math.max(1_000, IDLE_CLOSE_MS - quietMs));
        return;
      }
      this.consecutive = this.opts.failures - 1;
      this.openedAtMs = undefined;
      this.set('closed');
    }, afterMs);
    this.idleTimer.unref?.();
  }

  private set(state: CircuitState): void {
    const changed = state !== this.current;
    this.current = state;
    if (changed) this.opts.onState?.(state);
    // Waiters re-decide on any change: a close lets them all call, a reopen hands the probe on.
    for (const wake of [...this.wakers]) wake();
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      this.wakers.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
