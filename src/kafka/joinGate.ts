/**
 * The exclusive side of a bounded read (./readRange.ts): a member that must hold all of a topic alone (dlq replay)
 * has every join checked by its caller before another record is handed over; a join that does not complete in
 * time ends the read; and a long record handler (a rate-limited replay, a slow produce) keeps heartbeating, so
 * the member's session outlives it, and learns from those heartbeats that a rebalance began (another member
 * joined): no further record is handed over until the rejoin is checked.
 */
import { groupGenerationOver } from './errors';

export interface ExclusiveRead {
  /** The group session's timeout: a member that stops heartbeating (a killed process) leaves after this long. */
  sessionTimeoutMs: number;
  /** The longest wait for a join to complete (the first one, or a rejoin after a rebalance). */
  joinTimeoutMs: number;
  /** The error a join that did not complete in time ends the read with. */
  joinTimedOut: () => Error;
  /**
   * Called at every join with the partitions of the topic assigned to this member; records are handed over only
   * once it resolved, and a rejection ends the read.
   */
  onJoin: (assigned: number[]) => Promise<void>;
}

/** kafkajs consumer settings for an exclusive member: heartbeats well within the session. */
export function exclusiveConsumerSettings(x: ExclusiveRead): {
  sessionTimeout: number;
  rebalanceTimeout: number;
  heartbeatInterval: number;
} {
  return {
    sessionTimeout: x.sessionTimeoutMs,
    rebalanceTimeout: x.sessionTimeoutMs,
    heartbeatInterval: heartbeatEvery(x),
  };
}

function heartbeatEvery(x: ExclusiveRead): number {
  return Math.max(100, Math.floor(x.sessionTimeoutMs / 10));
}

export class JoinGate {
  private checked: Promise<void>;
  private pending: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly x: ExclusiveRead,
    private readonly fail: (err: unknown) => void,
  ) {
    this.checked = this.awaitJoin();
  }

  /** A join came: the caller's check of it gates every record from now on. */
  joined(assigned: number[]): void {
    clearTimeout(this.timer);
    const check = this.x.onJoin(assigned);
    check.catch(this.fail);
    if (this.pending) {
      check.then(this.pending.resolve, this.pending.reject);
      this.pending = undefined;
    }
    this.checked = check;
  }

  /** Resolves when the records may be handed over; rejects when the last join's check failed. */
  ready(): Promise<void> {
    return this.checked;
  }

  /** Runs `handle`, heartbeating meanwhile; a heartbeat that finds a rebalance holds the records after it. */
  async during<T>(handle: () => Promise<T>, heartbeat: () => Promise<void>): Promise<T> {
    const beat = setInterval(() => {
      heartbeat().catch((err: unknown) => {
        if (groupGenerationOver(err)) this.checked = this.awaitJoin();
      });
    }, heartbeatEvery(this.x));
    try {
      return await handle();
    } finally {
      clearInterval(beat);
    }
  }

  close(): void {
    clearTimeout(this.timer);
  }

  private awaitJoin(): Promise<void> {
    if (this.pending) return this.checked;
    const next = new Promise<void>((resolve, reject) => (this.pending = { resolve, reject }));
    next.catch(() => undefined);
    this.timer = setTimeout(() => {
      const err = this.x.joinTimedOut();
      this.pending?.reject(err);
      this.fail(err);
    }, this.x.joinTimeoutMs);
    return next;
  }
}
