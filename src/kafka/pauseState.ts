/**
 * The tenant pauses one process knows (contract §2, "Pausing a tenant"): the pause topic's records applied in order,
 * a tenant's latest pause its state, and a tombstone keyed by a tenant deleting it, as compaction will. Who reads
 * the records into it: ./tenantPauseFollower.ts.
 */
import type { KafkaMessage } from 'kafkajs';
import type { Gauge } from 'prom-client';
import type { TenantPause } from '../contract/tenantPause';
import type { Logger } from '../logger';
import { pauseOf } from './pauseTopic';

export interface PauseStateOptions {
  logger: Logger;
  /** 1 while a tenant is paused, 0 once resumed; no series once its pause is deleted. */
  gauge?: Gauge<'tenant'>;
  /** Called after each record that changed a tenant's pause (paused, resumed, its reason changed, deleted). */
  onChange?: (tenant: string) => void;
}

export class TenantPauseState {
  private readonly state = new Map<string, TenantPause>();
  /** The first read is done: from now on each change is logged (before, the history would be, at every start). */
  private announced = false;

  constructor(private readonly o: PauseStateOptions) {}

  /** The tenant's pause while it is paused; undefined when it is not. */
  pauseOf(tenant: string): TenantPause | undefined {
    const pause = this.state.get(tenant);
    return pause?.paused ? pause : undefined;
  }

  /** Every tenant's latest pause read so far. */
  all(): Map<string, TenantPause> {
    return new Map(this.state);
  }

  /** The topic was read to its end for the first time: says which tenants are paused, once. */
  announce(): void {
    if (this.announced) return;
    this.announced = true;
    const paused = [...this.state.values()].filter((p) => p.paused).map((p) => p.tenant);
    this.o.logger.info({ paused }, `tenant pauses read: ${paused.length} tenant(s) paused`);
  }

  apply(message: KafkaMessage): void {
    const pause = pauseOf(message);
    if (typeof pause === 'string') {
      this.o.logger.warn(
        { offset: message.offset, problem: pause },
        'skipping a record of the tenant pause topic',
      );
      return;
    }
    const before = this.state.get(pause.tenant);
    const after = 'deleted' in pause ? undefined : pause;
    if (after) {
      this.state.set(after.tenant, after);
      this.o.gauge?.set({ tenant: after.tenant }, after.paused ? 1 : 0);
    } else {
      this.state.delete(pause.tenant);
      this.o.gauge?.remove({ tenant: pause.tenant });
    }
    if (this.announced && (after?.paused ?? false) !== (before?.paused ?? false)) {
      // A paused tenant's pause deleted is a resume nobody wrote as one (a tombstone written by mistake reads so).
      this.o.logger[after ? 'info' : 'warn'](
        { tenant: pause.tenant, reason: after?.reason, by: after?.by, at: after?.at },
        after?.paused
          ? 'tenant paused: its records wait in Kafka'
          : after
            ? 'tenant resumed'
            : 'tenant resumed: its pause was deleted',
      );
    }
    this.o.onChange?.(pause.tenant);
  }
}
