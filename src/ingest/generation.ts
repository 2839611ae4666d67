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
 * Either way the answer is handed back to kafkajs, which rejoins. A handler that swallowed it kept working
 * through its fetched records outside the group, holding up the rebalance, and after a coordinator move it never
 * rejoined at all.
 */
export class GroupGeneration {
  private endedBy: Error | undefined;
  private rejoinAskedBy: Error | undefined;
  private superseded = false;
  private resolveOver!: () => void;
  private resolveClosed!: () => void;
  /** Resolves when the generation is over: a wait on a commit in flight races it. */
  readonly ended: Promise<void> = new Promise((resolve) => (this.resolveOver = resolve));
  /** Resolves when it is over or a rejoin is asked: a wait before retrying a commit races it. */
  readonly closed: Promise<void> = new Promise((resolve) => (this.resolveClosed = resolve));

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
    this.resolveOver();
    this.resolveClosed();
    return true;
  }

  /** The group is rebalancing: commits still count. True the first time (the caller logs it once). */
  askRejoin(err: Error): boolean {
    if (this.closing) return false;
    this.rejoinAskedBy = err;
    this.resolveClosed();
    return true;
  }

  /** A newer generation was joined: nothing to hand back, kafkajs has rejoined already. */
  supersede(): void {
    this.superseded = true;
    this.resolveOver();
    this.resolveClosed();
  }
}
