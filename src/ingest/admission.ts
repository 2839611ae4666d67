/**
 * Admission per tenant: at most `maxOpen` dispatches of one tenant started by this ingester and not yet closed.
 *
 * Why: Temporal's task queue fairness reorders a queue, it does not make the server less busy. A tenant that
 * publishes 20,000 records at once was started as fast as the ingester could go, far faster than the server
 * executes; every start is a write, and the other tenants' dispatches waited for the server, not for the queue
 * (docs/performance.md, "Fairness between tenants"). With a bound, a tenant's starts follow its completions and
 * the rest of its backlog stays in Kafka, durable and counted as lag, until there is room.
 *
 * A record takes a slot before its start; the slot comes back when the record did not start anything (a
 * duplicate, a dead letter, a failure) or, for a started execution, when that execution closes. Closes are seen
 * by waiting on each execution's result (one long poll each, so the bound is also what this costs). The count is
 * this process's: a restarted ingester starts from zero, and several ingesters each hold their own bound.
 */
import type { Gauge } from 'prom-client';

/** Waits until the execution closes, however it closes; rejects only when that could not be learned. */
export type WatchClose = (workflowId: string, runId: string, signal: AbortSignal) => Promise<void>;

const WATCH_RETRY_MS = 1000;

export class TenantAdmission {
  private readonly open = new Map<string, number>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly abort = new AbortController();

  constructor(
    /** 0: no bound (nothing is watched). */
    private readonly maxOpen: number,
    private readonly watch: WatchClose,
    private readonly gauge?: Gauge<'tenant'>,
  ) {}

  get bounded(): boolean {
    return this.maxOpen > 0;
  }

  /** Takes a slot for one record of the tenant; false when the tenant already has its bound open. */
  take(tenant: string): boolean {
    if (!this.bounded) return true;
    const n = this.open.get(tenant) ?? 0;
    if (n >= this.maxOpen) return false;
    this.set(tenant, n + 1);
    return true;
  }

  /** The record started nothing that stays open: its slot is free at once. */
  giveBack(tenant: string): void {
    if (!this.bounded) return;
    this.set(tenant, Math.max(0, (this.open.get(tenant) ?? 0) - 1));
    // Room comes back with some slack, so a full tenant is resumed for a run of records, not one at a time.
    if ((this.open.get(tenant) ?? 0) <= this.resumeAt()) this.wake(tenant);
  }

  /** The record started (or joined) an execution: its slot is free once that execution closes. */
  holdUntilClosed(tenant: string, workflowId: string, runId: string): void {
    if (!this.bounded) return;
    const wait = async (): Promise<void> => {
      for (;;) {
        if (this.abort.signal.aborted) return;
        try {
          await this.watch(workflowId, runId, this.abort.signal);
          return;
        } catch {
          // Temporal unreachable: the execution is still open as far as anyone knows; ask again.
          if (this.abort.signal.aborted) return;
          await new Promise((r) => setTimeout(r, WATCH_RETRY_MS).unref());
        }
      }
    };
    void wait().finally(() => this.giveBack(tenant));
  }

  /** Calls `fn` once when the tenant has room again (at once if it has). */
  whenRoom(tenant: string, fn: () => void): void {
    if ((this.open.get(tenant) ?? 0) <= this.resumeAt()) {
      fn();
      return;
    }
    let set = this.waiters.get(tenant);
    if (!set) this.waiters.set(tenant, (set = new Set()));
    set.add(fn);
  }

  /** The consumer that paused for room is gone: its waiters with it (kafkajs forgets its pauses too). */
  forgetWaiters(): void {
    this.waiters.clear();
  }

  openOf(tenant: string): number {
    return this.open.get(tenant) ?? 0;
  }

  /** Stops watching: the open executions run on in Temporal; only this process stops counting them. */
  close(): void {
    this.abort.abort();
    this.waiters.clear();
  }

  private resumeAt(): number {
    return Math.max(0, this.maxOpen - Math.max(1, Math.floor(this.maxOpen / 4)));
  }

  private wake(tenant: string): void {
    const set = this.waiters.get(tenant);
    if (!set) return;
    this.waiters.delete(tenant);
    for (const fn of set) fn();
  }

  private set(tenant: string, n: number): void {
    if (n === 0) this.open.delete(tenant);
    else this.open.set(tenant, n);
    this.gauge?.set({ tenant }, n);
  }
}
