/**
 * One consumer-group generation of the ingester's consumer, as its batch handlers see it. Two ways it comes to
 * an end:
 *
 * - **Over**: a heartbeat or an offset commit is answered "your generation is over" (kafka/errors.ts
 *   groupGenerationOver), or kafkajs has joined a newer one by itself (it rejoins from inside a fetch on a
 *   stale-metadata answer while other batches still run). Every batch of it stops taking records, lets the ones
 *   in flight finish and commits nothing more: a commit now goes out under the newer generation, for partitions
 *   that may belong to another member.
 * - **Rejoin asked**: a heartbeat is answered "the group is rebalancing" (kafka/errors.ts groupRebalancing). The
 *   generation still stands: the coordinator accepts this member's commits until the rebalance completes, which
 *   waits for it to rejoin. Every batch of it stops taking records, lets the ones in flight finish, commits what
 *   finished, and returns, so the member rejoins soon and its partitions' next owner starts after those records.
 *
 * A batch kept in memory after handing its turn back (keptBatches.ts) runs outside kafkajs's handler, so kafkajs
 * does not wait for it before rejoining: it stops the same way, and what it finishes after the join is redelivered
 * to the partition's next owner (absorbed: the executions exist).
 *
 * Either way the answer is handed back to kafkajs, which rejoins. A handler that swallowed it kept working
 * through its fetched records outside the group, holding up the rebalance, and after a coordinator move it never
 * rejoined at all.
 */
export class GroupGeneration {
  private endedBy: Error | undefined;
  private rejoinAskedBy: Error | undefined;
  private superseded = false;
  /**
   * Who waits now, each until its work is done or the generation is over (`overWaiters`), or over or asked to
   * rejoin (`closingWaiters`); an entry is removed when its wait ends either way. Not promises raced by every wait:
   * a generation lasts as long as the group is stable (weeks), and each race on a pending promise leaves a reaction
   * on it until it settles, a few hundred bytes per batch for the whole generation
   * (test/unit/generationRetention.test.ts).
   */
  private readonly overWaiters = new Set<() => void>();
  private readonly closingWaiters = new Set<() => void>();

  /**
   * The answer that ended the generation or asked for the rejoin, to be rethrown to kafkajs; else undefined (also
   * for a rejoin kafkajs has made meanwhile: handing the answer back then would only cost another rebalance).
   */
  get endedByError(): Error | undefined {
    return this.endedBy ?? (this.superseded ? undefined : this.rejoinAskedBy);
  }

  /** Ended by an answer, or replaced by a join kafkajs made itself: no commit is right any more. */
  get over(): boolean {
    return this.superseded || this.endedBy !== undefined;
  }

  /** Over, or asked to rejoin: its batches take no further record and do not retry a failed commit. */
  get closing(): boolean {
    return this.over || this.rejoinAskedBy !== undefined;
  }

  /** True the first time: the caller logs it once per generation. */
  end(err: Error): boolean {
    if (this.over) return false;
    this.endedBy = err;
    wakeAll(this.overWaiters);
    wakeAll(this.closingWaiters);
    return true;
  }

  /** The group is rebalancing: commits still count. True the first time (the caller logs it once). */
  askRejoin(err: Error): boolean {
    if (this.closing) return false;
    this.rejoinAskedBy = err;
    wakeAll(this.closingWaiters);
    return true;
  }

  /** A newer generation was joined: nothing to hand back, kafkajs has rejoined already. */
  supersede(): void {
    this.superseded = true;
    wakeAll(this.overWaiters);
    wakeAll(this.closingWaiters);
  }

  /**
   * Calls `wake` once the generation is over or asked to rejoin (at once if it is already); returns how to stop
   * watching, which a wait woken otherwise calls so nothing stays behind for the generation's life.
   */
  whenClosing(wake: () => void): () => void {
    if (this.closing) {
      wake();
      return () => undefined;
    }
    this.closingWaiters.add(wake);
    return () => void this.closingWaiters.delete(wake);
  }

  /** How many waits are in progress. */
  get waiting(): number {
    return this.overWaiters.size + this.closingWaiters.size;
  }

  /**
   * Waits for `work` (a commit in flight) unless the generation is over first; never rejects (a commit's failure
   * is the committer's to report). Leaves nothing behind once either has happened.
   */
  until(work: Promise<unknown> | undefined): Promise<void> {
    if (work === undefined || this.over) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.overWaiters.delete(done);
        resolve();
      };
      this.overWaiters.add(done);
      work.then(done, done);
    });
  }

  /** Sleeps `ms` (before retrying a commit) unless the generation is over or asked to rejoin first. */
  sleep(ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.closingWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms).unref();
      this.closingWaiters.add(done);
    });
  }
}

function wakeAll(waiters: Set<() => void>): void {
  for (const wake of [...waiters]) wake();
}
