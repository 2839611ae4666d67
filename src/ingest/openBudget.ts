/**
 * How many dispatches this ingester keeps open while tenants share it, and each tenant's fair share of it
 * (fairShare, which admission.ts applies): the budget is the sum of what each active tenant's pace needs. Derived from what the relay downstream of this ingester (Temporal, the workers, the runs
 * API) completes, so that the dispatches started and not yet closed are what keeps that pipeline busy and little
 * more: whatever is open beyond it waits in Temporal's queues, where another tenant's fresh dispatch would wait
 * behind it; whatever is held back waits in Kafka, counted as lag, where the ingester's fair turns apply.
 *
 * Little's law: to complete λ dispatches a second when each is open for D seconds unqueued takes λ·D open. Each
 * tenant needs HEADROOM·λ·D, with λ its closes of the last seconds and D its shortest open time seen lately (its
 * pipeline's time without a queue: its own API's latency among it, so a tenant behind a slow API needs many and a
 * fast one's trickle does not shrink that). While nothing downstream is the limit, a dispatch is open
 * about D, the closes follow the budget, and the budget grows by HEADROOM each rate window; once something is the
 * limit (a saturated server, busy workers), the open time grows instead of the closes, and the budget settles
 * where dispatches are open about HEADROOM·D: a queue of about one dispatch's time, whatever the pipeline's
 * speed. Behind a slow API D is long and the budget large; behind a saturated server it stays near what the
 * server completes, so what another tenant's fresh dispatch finds queued ahead of it stays short.
 */

/**
 * Slots per active tenant the shared budget never goes below: two tenants share at least 2, so on a fast pipeline
 * a flooding tenant beside a quiet one keeps about one open, and so does the quiet one. A share grows past that
 * only as the tenants' paces need. A floor of 3 let the flooding tenant keep 4 and take the cores the
 * ingester freed, and the quiet one's p99 grew past 2x on a saturated two-core machine (docs/performance.md).
 */
export const BUDGET_FLOOR_PER_TENANT = 1;
/** Open dispatches per dispatch completed in the unqueued open time: the queueing the budget allows. */
export const BUDGET_HEADROOM = 2;
/** Closes counted over this many one-second buckets. */
const RATE_SECONDS = 5;
/** The shortest open time is the least of two windows of this length (the current and the previous). */
const MIN_WINDOW_MS = 15_000;

/**
 * The budget shared among `active` tenants whose paces need `needs` open between them: their sum, at least the
 * floor per tenant (a share of one slot costs no refetch: a batch waiting for room is kept, keptBatches.ts), at most
 * `max` (POIMEN_INGEST_MAX_OPEN).
 */
export function sharedBudget(needs: number, active: number, max: number): number {
  return Math.min(max, Math.max(BUDGET_FLOOR_PER_TENANT * active, needs));
}

/**
 * Slots beyond what another active tenant has open that never count as unused: how far a tenant's share reaches
 * past its equal part into what the others leave (not slots the other may take beyond its own share).
 */
export const SPARE_SLOTS = 2;
/** Slots a lone tenant leaves free of POIMEN_INGEST_MAX_OPEN, so that a tenant arriving finds room at once. */
const KEPT_FOR_NEWCOMERS = 2 * BUDGET_FLOOR_PER_TENANT;

/** Who is active now and what they hold: computed once per decision, shared by every tenant it looks at. */
export interface Shares {
  active: Set<string>;
  /** Σ over active tenants of (open + SPARE_SLOTS). */
  held: number;
  /** Σ over active tenants of what their paces need. */
  needs: number;
}

/**
 * The tenant's share of `max` (POIMEN_INGEST_MAX_OPEN) while `s` holds, with `open` of its own open: alone, all of
 * it but the slots kept for a newcomer (a small max keeps at most half of itself, so a lone tenant never gets less
 * than a shared one); else its equal part of the shared budget, or more when the others leave theirs unused.
 */
export function fairShare(tenant: string, s: Shares, open: number, max: number): number {
  const others = s.active.size - (s.active.has(tenant) ? 1 : 0);
  if (others === 0) return Math.max(1, max - Math.min(KEPT_FOR_NEWCOMERS, Math.floor(max / 2)));
  const othersHold = s.held - (s.active.has(tenant) ? open + SPARE_SLOTS : 0);
  const budget = sharedBudget(s.needs, others + 1, max);
  return Math.max(1, Math.floor(budget / (others + 1)), budget - othersHold);
}

/** One tenant's pace: its closes per second and shortest open time, and the open dispatches they need. */
export class OpenBudget {
  private readonly buckets = new Array<number>(RATE_SECONDS).fill(0);
  private bucketSecond = 0;
  private minCurrent = Number.POSITIVE_INFINITY;
  private minPrevious = Number.POSITIVE_INFINITY;
  private minWindowStart: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.minWindowStart = now();
    this.bucketSecond = Math.floor(this.minWindowStart / 1000);
  }

  /** An execution this ingester started closed after being open `openMs` (undefined: seen late, time unknown). */
  closed(openMs?: number): void {
    this.advance();
    this.buckets[this.bucketSecond % RATE_SECONDS]!++;
    if (openMs !== undefined) this.minCurrent = Math.min(this.minCurrent, openMs);
  }

  /** Closes per second over the last seconds. */
  rate(): number {
    this.advance();
    let sum = 0;
    for (const n of this.buckets) sum += n;
    return sum / RATE_SECONDS;
  }

  /** The shortest open time seen lately, in ms; undefined before any close. */
  shortestOpenMs(): number | undefined {
    this.advance();
    const m = Math.min(this.minCurrent, this.minPrevious);
    return Number.isFinite(m) ? m : undefined;
  }

  /** The open dispatches this pace needs: HEADROOM·λ·D (0 before any close). */
  needed(): number {
    const d = this.shortestOpenMs();
    return d === undefined ? 0 : Math.ceil((BUDGET_HEADROOM * this.rate() * d) / 1000);
  }

  private advance(): void {
    const t = this.now();
    const second = Math.floor(t / 1000);
    // Buckets of the seconds that passed without a close are emptied (all of them after a long quiet).
    for (let s = this.bucketSecond + 1; s <= second && s <= this.bucketSecond + RATE_SECONDS; s++) {
      this.buckets[s % RATE_SECONDS] = 0;
    }
    this.bucketSecond = Math.max(this.bucketSecond, second);
    if (t - this.minWindowStart >= MIN_WINDOW_MS) {
      // A quiet of two windows or more forgets both: the pipeline may have changed since.
      this.minPrevious =
        t - this.minWindowStart >= 2 * MIN_WINDOW_MS ? Number.POSITIVE_INFINITY : this.minCurrent;
      this.minCurrent = Number.POSITIVE_INFINITY;
      this.minWindowStart = t;
    }
  }
}
