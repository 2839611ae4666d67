/**
 * Admission per tenant: how many dispatches of each tenant this ingester has started and not yet seen closed, and
 * whether a tenant's next record may start now or waits in Kafka for room. On by default. A tenant an operator
 * paused (`tenant pause`) has no room at all until resumed, and takes no share from the others meanwhile.
 *
 * Why: Temporal's task queue fairness reorders a queue, it does not make the server less busy; a tenant's flood
 * started at once made every other tenant wait for the server (docs/design.md, "Fair turns for tenants"). Bounded,
 * a tenant's starts follow its completions and the rest of its backlog stays in Kafka, counted as lag.
 *
 * The bound is a fair share, not a fixed number:
 * - a tenant alone (no other tenant had a record or an open dispatch here in the last seconds) may keep up to
 *   POIMEN_INGEST_MAX_OPEN open but for a few slots kept for a newcomer: the whole ingester is its own;
 * - POIMEN_INGEST_MAX_OPEN also caps the ingester's open dispatches in all, whoever holds them (a paused tenant's,
 *   held for the whole pause, are left out up to the cap: counted());
 * - with others active, the ingester's budget (openBudget.ts: what keeps the pipeline downstream busy) is shared:
 *   each tenant may keep its equal part open, and more when the others leave theirs unused (what they have open
 *   plus a spare slot or two never counts as unused), so nothing idles while one tenant has work and none waits
 *   behind another's backlog for long;
 * - POIMEN_INGEST_TENANT_MAX_OPEN, when set, caps every tenant's share besides.
 *
 * A record takes a slot before its start; the slot comes back when the record did not start anything (a
 * duplicate, a dead letter, a failure) or, for a started execution, when that execution closes. Closes are seen
 * by a long poll on each execution's close event (one open long poll per open dispatch), except for a tenant alone
 * here with room to spare in its bound (coarseFor): nobody waits for its slots, so one visibility query per interval
 * for all its dispatches (temporal/visibilityCloses.ts), seen half a second late, costs less. The count is this
 * process's: a restarted ingester starts from zero, and several ingesters each hold their own. A record that
 * joined an execution already counted takes no second slot.
 */
import type { Gauge } from 'prom-client';
import { setMaxListeners } from 'node:events';
import type { Logger } from '../logger';
import { type LoneWatch, type WatchClose, WatchChoice, WatchFailures, untilClosed } from './closeWatch';
import { OpenBudget, SPARE_SLOTS, type Shares, fairShare, sharedBudget } from './openBudget';
import { RoomQueue } from './roomQueue';

export interface AdmissionOptions {
  /** POIMEN_INGEST_MAX_OPEN: a lone tenant's bound and the shared budget's ceiling; 0: no fair shares. */
  maxOpen: number;
  /** POIMEN_INGEST_TENANT_MAX_OPEN: a fixed cap on every tenant's share; 0: none. */
  tenantMaxOpen: number;
  watch: WatchClose;
  /** A cheaper, later-seeing watch for the dispatches of a tenant alone here (coarseFor); `watch` when unset. */
  lone?: LoneWatch;
  gauge?: Gauge<'tenant'>;
  /** The shared budget, set at every close. */
  budgetGauge?: Gauge;
  logger?: Logger;
  /** ms, monotonic; tests pass their own clock. */
  now?: () => number;
  /** Whether an operator paused the tenant (`tenant pause`): it starts nothing until resumed, bounded or not. */
  paused?: (tenant: string) => boolean;
}

/** A tenant with a record here this recently counts as active, open dispatches or not. */
export const ACTIVE_MS = 5000;
/** How often waiting tenants are looked at again when nothing closes (a share grows when a tenant goes quiet). */
const RECHECK_MS = 500;
/** The least lone bound at which its closes may be seen late: below it, the late slots are much of the bound. */
export const COARSE_MIN_LIMIT = 64;
/** Seconds of a lone tenant's closes its bound must spare for the lone watch: its delay, with room. */
const LATE_S = 2;

export class TenantAdmission {
  private readonly open = new Map<string, number>();
  private readonly lastSeen = new Map<string, number>();
  /** Executions counted now (workflow id and run id), each holding one slot of its tenant. */
  private readonly watched = new Set<string>();
  /** The partitions waiting for room. */
  private readonly waiters: RoomQueue;
  private readonly abort = new AbortController();
  /** Each tenant's pace (openBudget.ts), while fair shares are on. */
  private readonly paces = new Map<string, OpenBudget>();
  private total = 0;
  private readonly now: () => number;
  private recheck: NodeJS.Timeout | undefined;
  private readonly watchFailures: WatchFailures;
  private readonly watches: WatchChoice;

  constructor(private readonly o: AdmissionOptions) {
    this.now = o.now ?? (() => performance.now());
    this.watchFailures = new WatchFailures(o.logger);
    this.waiters = new RoomQueue(o.logger);
    this.watches = new WatchChoice({
      precise: o.watch,
      ...(o.lone ? { lone: o.lone } : {}),
      now: this.now,
      mayBeLate: (tenant) => this.coarseFor(tenant),
    });
    // Every open watch listens on this one signal for the length of one call: many listeners are no leak here.
    setMaxListeners(0, this.abort.signal);
  }

  get bounded(): boolean {
    return this.o.maxOpen > 0 || this.o.tenantMaxOpen > 0;
  }

  /** Whether an operator has the tenant paused now. */
  paused(tenant: string): boolean {
    return this.o.paused?.(tenant) === true;
  }

  /** Takes a slot for one record of the tenant; false when it is paused or already has its share open. */
  take(tenant: string): boolean {
    if (this.paused(tenant)) return false;
    if (!this.bounded) return true;
    if (this.fair) this.lastSeen.set(tenant, this.now());
    const n = this.openOf(tenant);
    if (n >= this.limit(tenant) || (this.fair && this.counted() >= this.o.maxOpen)) return false;
    this.set(tenant, n + 1);
    return true;
  }

  /** The record started nothing that stays open: its slot is free at once. */
  giveBack(tenant: string): void {
    if (!this.bounded) return;
    this.set(tenant, Math.max(0, this.openOf(tenant) - 1));
    this.wakeAll();
  }

  /**
   * The record started (or joined) an execution: its slot is free once that execution closes. A record that joined
   * an execution already counted (a redelivery, a repeated dispatch_key) gives its slot back at once.
   */
  holdUntilClosed(tenant: string, workflowId: string, runId: string): void {
    if (!this.bounded) return;
    const key = `${workflowId}\n${runId}`;
    if (this.watched.has(key)) {
      this.giveBack(tenant);
      return;
    }
    this.watched.add(key);
    const since = this.now();
    const watch = this.watches.forDispatch(tenant);
    void untilClosed(watch.watch, { workflowId, runId }, this.abort.signal, this.watchFailures)
      .then((seen) => {
        // Only a close seen as it happened measures the pace (not an execution gone past retention), and only a
        // close seen at once its open time: visibility's delay is not the pipeline's.
        if (!this.fair || !seen || this.abort.signal.aborted) return;
        let pace = this.paces.get(tenant);
        if (!pace) this.paces.set(tenant, (pace = new OpenBudget(this.now)));
        pace.closed(watch.seenLate() ? undefined : this.now() - since);
      })
      .catch(() => undefined)
      .finally(() => {
        this.watched.delete(key);
        this.giveBack(tenant);
      });
  }

  /**
   * Calls `resume` once the tenant has room (at once if it has), or with `orPaused` also once it is paused (a wait
   * that holds something for its length: a kept batch); `partition` names one entry, however often.
   */
  whenRoom(tenant: string, partition: string, resume: () => void, o: { orPaused?: boolean } = {}): void {
    const shares = this.shares();
    if (!this.waiters.has(tenant) && this.freeToResume(tenant, shares) > 0) {
      this.waiters.call(tenant, resume);
      return;
    }
    this.waiters.add(tenant, partition, resume, o.orPaused === true);
    this.wake(tenant, shares);
    if (this.waiters.size > 0) this.recheck ??= setInterval(() => this.wakeAll(), RECHECK_MS).unref();
  }

  /** A wait for room ended otherwise (a rejoin, a failure): its entry goes, unless another took its place. */
  cancelWait(tenant: string, partition: string, resume: () => void): void {
    this.waiters.cancel(tenant, partition, resume);
  }

  /** The consumer that paused for room is gone: its waiters with it (kafkajs forgets its pauses too). */
  forgetWaiters(): void {
    this.waiters.clear();
    this.stopRecheck();
  }

  openOf(tenant: string): number {
    return this.open.get(tenant) ?? 0;
  }

  /** How many dispatches the tenant may keep open now: its fair share, within the fixed cap. */
  limit(tenant: string, shares: Shares | undefined = this.shares()): number {
    const share = shares ? fairShare(tenant, shares, this.openOf(tenant), this.o.maxOpen) : Infinity;
    return this.o.tenantMaxOpen > 0 ? Math.min(share, this.o.tenantMaxOpen) : share;
  }

  /**
   * Whether the tenant's closes may be seen late (the lone watch): fair shares on, no fixed cap, no other tenant
   * active here, and a bound above what its pace needs plus LATE_S of its closes (the slots held late): else a
   * late close is a start of its own held back.
   */
  private coarseFor(tenant: string): boolean {
    if (this.o.tenantMaxOpen > 0) return false;
    // Another tenant with open dispatches (and not paused): not alone, without computing the shares a second time.
    for (const t of this.open.keys()) if (t !== tenant && !this.paused(t)) return false;
    const shares = this.shares();
    if (!shares || shares.active.size !== 1 || !shares.active.has(tenant)) return false;
    const pace = this.paces.get(tenant);
    const late = pace ? pace.needed() + Math.ceil(pace.rate() * LATE_S) : 0;
    return this.limit(tenant, shares) >= Math.max(COARSE_MIN_LIMIT, late);
  }

  private get fair(): boolean {
    return this.o.maxOpen > 0;
  }

  /** Stops watching: the open executions run on in Temporal; only this process stops counting them. */
  close(): void {
    this.abort.abort();
    this.o.lone?.close();
    this.waiters.clear();
    this.stopRecheck();
  }

  /**
   * The active tenants, what they hold and the budget they share; undefined without fair shares. Tenants quiet
   * past the window with nothing open are forgotten here (their pace with them).
   */
  private shares(): Shares | undefined {
    if (!this.fair) return undefined;
    const cutoff = this.now() - ACTIVE_MS;
    const active = new Set<string>();
    let held = 0;
    let needs = 0;
    for (const t of new Set([...this.open.keys(), ...this.lastSeen.keys(), ...this.waiters.tenants()])) {
      const seen = this.lastSeen.get(t);
      if (this.paused(t)) continue; // waits for an operator, not for a share (nor in the cap: counted())
      if (this.openOf(t) === 0 && !this.waiters.has(t) && (seen === undefined || seen < cutoff)) {
        this.lastSeen.delete(t);
        this.paces.delete(t);
        continue;
      }
      active.add(t);
      held += this.openOf(t) + SPARE_SLOTS;
      needs += this.paces.get(t)?.needed() ?? 0;
    }
    this.o.budgetGauge?.set(sharedBudget(needs, active.size, this.o.maxOpen));
    return { active, held, needs };
  }

  /**
   * How many of the tenant's waiting partitions may go on now: none until half its share is free (at least one
   * slot), then one per run of free slots, so each takes a run of records, not one (design.md).
   */
  private freeToResume(tenant: string, shares: Shares | undefined): number {
    if (this.paused(tenant)) return 0;
    let limit = this.limit(tenant, shares);
    if (!Number.isFinite(limit)) return Number.POSITIVE_INFINITY;
    // Within what the others leave of the ingester's cap.
    if (this.fair) limit = Math.min(limit, this.o.maxOpen - (this.counted() - this.openOf(tenant)));
    const run = Math.max(1, Math.ceil(limit / 2));
    const free = limit - this.openOf(tenant);
    return free >= run ? Math.floor(free / run) : 0;
  }

  /** Resumes every waiting partition that has room now (also at once when a tenant is resumed). */
  wakeAll(): void {
    if (this.waiters.size === 0) return this.stopRecheck();
    const shares = this.shares();
    for (const tenant of this.waiters.tenants()) this.wake(tenant, shares);
    if (this.waiters.size === 0) this.stopRecheck();
  }

  private wake(tenant: string, shares: Shares | undefined = this.shares()): void {
    if (!this.waiters.has(tenant)) return;
    if (this.paused(tenant)) this.waiters.endPaused(tenant);
    this.waiters.resume(tenant, this.freeToResume(tenant, shares));
  }

  private stopRecheck(): void {
    if (this.recheck) clearInterval(this.recheck);
    this.recheck = undefined;
  }

  /**
   * The open dispatches the cap counts: paused tenants' are left out, up to the cap itself (their calls are held for
   * the whole pause; at resume they count again, and the others wait for the excess to close). So the open
   * dispatches stay within twice the cap however many tenants are paused in turn.
   */
  private counted(): number {
    let paused = 0;
    for (const [tenant, open] of this.open) if (this.paused(tenant)) paused += open;
    return this.total - Math.min(paused, this.o.maxOpen);
  }

  private set(tenant: string, n: number): void {
    this.total += n - this.openOf(tenant);
    if (n === 0) this.open.delete(tenant);
    else this.open.set(tenant, n);
    this.o.gauge?.set({ tenant }, n);
  }
}
