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
  private resolveOver!: () => void;
  /** Resolves when the generation is over: a wait on a commit races it. */
  readonly ended: Promise<void> = new Promise((resolve) => (this.resolveOver = resolve));

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
    this.resolveOver();
    return true;
  }

  /** A newer generation was joined: nothing to hand back, kafkajs has rejoined already. */
  supersede(): void {
    this.superseded = true;
    this.resolveOver();
  }
}
