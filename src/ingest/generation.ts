/**
 * One consumer-group generation of the ingester's consumer, as its batch handlers see it. A heartbeat or an
 * offset commit answered "your generation is over" (kafka/errors.ts groupGenerationOver) ends it: every batch
 * of that generation stops taking records, lets the ones in flight finish, commits nothing more (a commit to a
 * coordinator that no longer has the member fails, after kafkajs has retried it for minutes) and hands the error
 * back to kafkajs, which rejoins. A handler that swallowed the answer kept working through its fetched records
 * outside the group, holding up the rebalance, and after a coordinator move it never rejoined at all.
 */
export class GroupGeneration {
  private endedBy: Error | undefined;
  private resolveEnded!: () => void;
  /** Resolves when the generation ends: a wait on a commit races it. */
  readonly ended: Promise<void> = new Promise((resolve) => (this.resolveEnded = resolve));

  /** The error that ended the generation, to be rethrown to kafkajs; undefined while it lasts. */
  get endedByError(): Error | undefined {
    return this.endedBy;
  }

  /** True the first time: the caller logs it once per generation. */
  end(err: Error): boolean {
    if (this.endedBy) return false;
    this.endedBy = err;
    this.resolveEnded();
    return true;
  }
}
