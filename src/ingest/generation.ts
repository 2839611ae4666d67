/**
 * One consumer-group generation of the ingester's consumer, as its batch handlers see it. It is over when a
 * heartbeat or an offset commit is answered "your generation is over" (kafka/errors.ts groupGenerationOver), or
 * when kafkajs has joined a newer one by itself (it rejoins from inside a fetch on a stale-metadata answer while
 * other batches still run). Every batch of a generation that is over stops taking records, lets the ones in flight
 * finish and commits nothing more: a commit now goes out under the newer generation, for partitions that may
 * belong to another member. An answer that ended it is handed back to kafkajs, which rejoins. A handler that
 * swallowed the answer kept working through its fetched records outside the group, holding up the rebalance,
 * and after a coordinator move it never rejoined at all.
 */
export class GroupGeneration {
  private endedBy: Error | undefined;
  private superseded = false;
  /**
   * Who waits for the end now: one entry per wait in progress, removed when the wait ends either way. Not a
   * promise raced by every wait: a generation lasts as long as the group is stable (weeks), and each race on a
   * pending promise leaves a reaction on it until it settles, a few hundred bytes per batch for the whole
   * generation (test/unit/generationRetention.test.ts).
   */
  private readonly waiters = new Set<() => void>();

  /** The answer that ended the generation, to be rethrown to kafkajs; undefined otherwise. */
  get endedByError(): Error | undefined {
    return this.endedBy;
  }

  /** Ended by an answer, or replaced by a join kafkajs made itself. */
  get over(): boolean {
    return this.superseded || this.endedBy !== undefined;
  }

  /** True the first time: the caller logs it once per generation. */
  end(err: Error): boolean {
    if (this.over) return false;
    this.endedBy = err;
    this.wakeAll();
    return true;
  }

  /** A newer generation was joined: nothing to hand back, kafkajs has rejoined already. */
  supersede(): void {
    this.superseded = true;
    this.wakeAll();
  }

  /** How many waits are in progress (each ends with its work or with the generation). */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Waits for `work` unless the generation ends first; never rejects (a commit's failure is the committer's to
   * report). Leaves nothing behind once either has happened.
   */
  until(work: Promise<unknown> | undefined): Promise<void> {
    if (work === undefined || this.over) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        resolve();
      };
      this.waiters.add(done);
      work.then(done, done);
    });
  }

  /** Sleeps `ms` unless the generation ends first; the timer is cleared either way. */
  sleep(ms: number): Promise<void> {
    if (this.over) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms).unref();
      this.waiters.add(done);
    });
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
