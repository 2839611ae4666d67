/**
 * Fetches the ingester is never handed: a partition's fetch that held only transaction markers or aborted
 * transactions' records (a transactional producer's; docs/contract.md §2, "Committed offsets and lag"). kafkajs
 * filters those records out, moves its fetch position past them and, with autoCommit off, commits nothing; no
 * batch reaches eachBatch. Without a commit here the group's offset would stay below the log end for good (a
 * lag that never reaches 0, a backlog the lag alert and the autoscaler see), so each such fetch is committed
 * past once kafkajs reports it (its END_BATCH_PROCESS event with no record handed over).
 *
 * Nothing unhandled is committed: kafkajs fetches a partition from where the ingester resolved it, the end of the
 * finished prefix of its records (batchCommits.ts), so everything before such a fetch is finished. The commit is
 * kafkajs's consumer.commitOffsets, which retries transient errors but stops at once on "your generation is
 * over" (not retriable in kafkajs); a later batch of the same partition waits for it (`before`), so it never
 * lands after that batch's own commits, and a consumer being stopped waits for it (`settled`) before leaving.
 * Left open: a commit retried across a coordinator move could land after another member, now owning the
 * partition, committed further; its records after this offset would then be delivered again and absorbed as every
 * redelivery is (docs/design.md, "Nothing lost, nothing doubled").
 */
import type { KafkaConsumer } from '../kafka/port';
import type { Logger } from '../logger';

export class MarkerBatches {
  private readonly pending = new Map<string, Promise<void>>();

  constructor(private readonly log: Logger) {}

  /**
   * Commits past each fetch of `consumer` that handed no record over. `live(topic, partition)`: false once such a
   * commit would be wrong or pointless (the consumer replaced or stopping, the partition no longer assigned).
   */
  watch(consumer: KafkaConsumer, live: (topic: string, partition: number) => boolean): void {
    consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
      const { topic, partition, batchSize, firstOffset, lastOffset } = e.payload;
      // A batch handed over commits itself; firstOffset null: nothing at or after the fetched offset at all.
      if (batchSize !== 0 || firstOffset === null || !live(topic, partition)) return;
      const offset = (BigInt(lastOffset) + 1n).toString();
      const key = `${topic}/${partition}`;
      const commit = (this.pending.get(key) ?? Promise.resolve())
        .then(() =>
          live(topic, partition) ? consumer.commitOffsets([{ topic, partition, offset }]) : undefined,
        )
        .catch((err: unknown) => {
          // The next fetch of the partition that hands records over commits past this one anyway.
          this.log.debug({ err, topic, partition, offset }, 'commit past transaction markers failed');
        })
        .finally(() => {
          if (this.pending.get(key) === commit) this.pending.delete(key);
        });
      this.pending.set(key, commit);
    });
  }

  /** Waits for the partition's commit in flight, if any: a later batch's commits then land after it. */
  before(topic: string, partition: number): Promise<void> {
    return this.pending.get(`${topic}/${partition}`) ?? Promise.resolve();
  }

  /** Waits for every commit in flight (a consumer about to disconnect, which would drop them). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending.values()]);
  }
}
