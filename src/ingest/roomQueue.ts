/**
 * The partitions waiting for their tenant's room, per tenant, in turns (admission.ts decides how many go on): a
 * partition paused for room (batchTurn.ts) or a kept batch waiting in memory (keptBatches.ts) holds one entry,
 * however often it asks, and one that asks again waits behind the others.
 */
import type { Logger } from '../logger';

export class RoomQueue {
  private readonly byTenant = new Map<string, Map<string, () => void>>();
  /** Waits that a pause of their tenant ends too (`add`'s `orPaused`). */
  private readonly endsOnPause = new WeakSet<() => void>();

  constructor(private readonly logger?: Logger) {}

  get size(): number {
    return this.byTenant.size;
  }

  has(tenant: string): boolean {
    return this.byTenant.has(tenant);
  }

  tenants(): string[] {
    return [...this.byTenant.keys()];
  }

  /** To the end of the tenant's line; `orPaused`: a wait that holds something for its length (a kept batch). */
  add(tenant: string, partition: string, resume: () => void, orPaused: boolean): void {
    if (orPaused) this.endsOnPause.add(resume);
    let waiting = this.byTenant.get(tenant);
    if (!waiting) this.byTenant.set(tenant, (waiting = new Map()));
    waiting.delete(partition);
    waiting.set(partition, resume);
  }

  /** A wait ended otherwise (a rejoin, a failure): its entry goes, unless another took its place. */
  cancel(tenant: string, partition: string, resume: () => void): void {
    const waiting = this.byTenant.get(tenant);
    if (waiting?.get(partition) !== resume) return;
    waiting.delete(partition);
    if (waiting.size === 0) this.byTenant.delete(tenant);
  }

  clear(): void {
    this.byTenant.clear();
  }

  /** The tenant is paused: its waits that hold something for the pause's length end now. */
  endPaused(tenant: string): void {
    const waiting = this.byTenant.get(tenant);
    if (!waiting) return;
    for (const [partition, resume] of waiting) {
      if (!this.endsOnPause.has(resume)) continue;
      waiting.delete(partition);
      resume();
    }
    if (waiting.size === 0) this.byTenant.delete(tenant);
  }

  /** Lets up to `free` of the tenant's partitions go on, first in line first. */
  resume(tenant: string, free: number): void {
    const waiting = this.byTenant.get(tenant);
    if (!waiting) return;
    for (const [partition, resume] of waiting) {
      if (free-- <= 0) break;
      waiting.delete(partition);
      // A consumer torn down meanwhile has forgotten its pauses: the slot goes to the next partition.
      if (!this.call(tenant, resume)) free++;
    }
    if (waiting.size === 0) this.byTenant.delete(tenant);
  }

  /** Resumes one wait; false when its consumer could not (kafkajs between a crash and its restart). */
  call(tenant: string, resume: () => void): boolean {
    try {
      resume();
      return true;
    } catch (err) {
      this.logger?.debug({ err, tenant }, 'could not resume a partition that waited for room');
      return false;
    }
  }
}
