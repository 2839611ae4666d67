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
 * by a long poll on each execution's close event (so the bound is also what this costs: one open long poll per
 * open dispatch). The count is this process's: a restarted ingester starts from zero, and several ingesters each
 * hold their own bound. A record that joined an execution this process already counts takes no second slot.
 */
import type { Gauge } from 'prom-client';
import { setMaxListeners } from 'node:events';
import type { Logger } from '../logger';

/** Waits until the execution closes, however it closes; rejects only when that could not be learned. */
export type WatchClose = (workflowId: string, runId: string, signal: AbortSignal) => Promise<void>;

const WATCH_RETRY_MIN_MS = 1000;
const WATCH_RETRY_MAX_MS = 30_000;

export class TenantAdmission {
  private readonly open = new Map<string, number>();
  /** Executions counted now (workflow id and run id), each holding one slot of its tenant. */
  private readonly watched = new Set<string>();
  /** Per tenant, per partition waiting for room: what resumes it. One entry per partition, however often it paused. */
  private readonly waiters = new Map<string, Map<string, () => void>>();
  private readonly abort = new AbortController();
  private watchFailures = 0;

  constructor(
    /** 0: no bound (nothing is watched). */
    private readonly maxOpen: number,
    private readonly watch: WatchClose,
    private readonly gauge?: Gauge<'tenant'>,
    private readonly logger?: Logger,
  ) {
    // Every open watch listens on this one signal for the length of one call: many listeners are no leak here.
    setMaxListeners(0, this.abort.signal);
  }

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
    if ((this.open.get(tenant) ?? 0) <= this.resumeAt()) this.wake(tenant);
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
    void this.waitForClose(workflowId, runId)
      .catch(() => undefined)
      .finally(() => {
        this.watched.delete(key);
        this.giveBack(tenant);
      });
  }

  /**
   * Calls `resume` once the tenant has room again (at once if it has). `partition` names the waiter: a partition
   * that pauses again before it was resumed keeps one entry.
   */
  whenRoom(tenant: string, partition: string, resume: () => void): void {
    if ((this.open.get(tenant) ?? 0) <= this.resumeAt()) {
      resume();
      return;
    }
    let waiting = this.waiters.get(tenant);
    if (!waiting) this.waiters.set(tenant, (waiting = new Map()));
    waiting.set(partition, resume);
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

  /** One execution's close, asked again with backoff while Temporal cannot say: an outage never frees a slot. */
  private async waitForClose(workflowId: string, runId: string): Promise<void> {
    for (let delayMs = WATCH_RETRY_MIN_MS; ; delayMs = Math.min(delayMs * 2, WATCH_RETRY_MAX_MS)) {
      if (this.abort.signal.aborted) return;
      try {
        await this.watch(workflowId, runId, this.abort.signal);
        return;
      } catch (err) {
        if (this.abort.signal.aborted) return;
        // Process-wide count, so an outage logs its first failure and then every hundredth, not one per dispatch.
        this.watchFailures++;
        if (this.watchFailures === 1 || this.watchFailures % 100 === 0) {
          this.logger?.warn(
            { err, workflowId, failures: this.watchFailures },
            'cannot learn whether a dispatch closed; its admission slot stays held, asking again',
          );
        }
        // Jittered, so the watches of a recovered Temporal do not all ask in the same second.
        const waitMs = delayMs / 2 + Math.random() * (delayMs / 2);
        await new Promise((r) => setTimeout(r, waitMs).unref());
      }
    }
  }

  private resumeAt(): number {
    return Math.max(0, this.maxOpen - Math.max(1, Math.floor(this.maxOpen / 4)));
  }

  private wake(tenant: string): void {
    const waiting = this.waiters.get(tenant);
    if (!waiting) return;
    this.waiters.delete(tenant);
    for (const resume of waiting.values()) {
      try {
        resume();
      } catch (err) {
        // A consumer torn down meanwhile (kafkajs between a crash and its restart) has forgotten its pauses anyway.
        this.logger?.debug({ err, tenant }, 'could not resume a partition that waited for room');
      }
    }
  }

  private set(tenant: string, n: number): void {
    if (n === 0) this.open.delete(tenant);
    else this.open.set(tenant, n);
    this.gauge?.set({ tenant }, n);
  }
}
