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

/** `call`: go ahead; `probe`: go ahead as the one probe; `wait`: the breaker is open and someone else probes. */
export type Admission = 'call' | 'probe' | 'wait';

/** How a wait ended: a turn to call (after the breaker closed, or as the probe), or the caller's limit. */
export type WaitEnd = 'closed' | 'probe' | 'limit';

export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private consecutive = 0;
  private probeAtMs = 0;
  private probing = false;
  private openedAtMs: number | undefined;
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

  /** Decides for an attempt about to call. A `probe` admission must be followed by `record(…, true)`. */
  admit(): Admission {
    if (this.current === 'closed') return 'call';
    if (!this.probing && this.now() >= this.probeAtMs) {
      this.probing = true;
      this.set('half-open');
      return 'probe';
    }
    return 'wait';
  }

  /** Counts a finished call. `probe`: the call was admitted as the probe. */
  record(outcome: CallOutcome, probe: boolean): void {
    if (probe) this.probing = false;
    if (outcome.kind === 'abandoned') {
      // The probe's turn passes to the next waiter at once; nothing was learnt about the API.
      if (probe && this.current === 'half-open') this.reopen(0);
      return;
    }
    if (outcome.kind === 'healthy') {
      this.consecutive = 0;
      if (this.current !== 'closed') {
        this.openedAtMs = undefined;
        this.set('closed');
      }
      return;
    }
    this.consecutive += 1;
    this.last = { httpStatus: outcome.httpStatus, reason: outcome.reason, atMs: this.now() };
    const hold = Math.max(this.opts.probeIntervalMs, Math.min(outcome.retryAfterMs ?? 0, MAX_OPEN_MS));
    if (probe) this.reopen(hold);
    else if (this.current === 'closed' && this.consecutive >= this.opts.failures) {
      this.openedAtMs = this.now();
      this.reopen(hold);
    }
  }

  /**
   * Waits while the breaker holds this attempt back: until it closes, until this attempt is the probe, or until
   * `limitMs` (a time on the clock). `tick` runs at least every `tickMs` while waiting (the attempt's heartbeat);
   * an abort of `signal` rejects with its reason.
   */
  async wait(limitMs: number, signal: AbortSignal, tick: () => void, tickMs: number): Promise<WaitEnd> {
    for (;;) {
      signal.throwIfAborted();
      if (this.released) return 'limit';
      const admission = this.admit();
      if (admission === 'call') return 'closed';
      if (admission === 'probe') return 'probe';
      const now = this.now();
      if (now >= limitMs) return 'limit';
      tick();
      // While a probe is out, its result wakes the waiters; else the next probe time does.
      const next = this.probing ? now + tickMs : Math.max(this.probeAtMs, now + 1);
      await this.sleep(Math.min(limitMs, next, now + tickMs) - now, signal);
    }
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
    clearTimeout(this.idleTimer);
    // With nobody waiting when the probe is due, no probe would ever go and an idle worker would report "open" for
    // ever after the API came back. It closes instead, one failure from opening again: the next call is the probe.
    this.idleTimer = setTimeout(() => {
      if (this.current !== 'open' || this.wakers.size > 0) return;
      this.consecutive = this.opts.failures - 1;
      this.openedAtMs = undefined;
      this.set('closed');
    }, holdMs + 1);
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
