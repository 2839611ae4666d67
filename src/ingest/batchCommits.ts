/**
 * The offsets one batch commits. The committed offset is always the end of the contiguous prefix of finished
 * records, so nothing is skipped and nothing committed early; it is resolved to kafkajs as it grows (the next
 * fetch starts there) and committed every `every` records in the background, one commit at a time, so a later
 * commit never lands before an earlier one. A failed commit is not repeated at every record: the next one, some
 * records on, covers it. The batch's last commit covers its whole prefix and is retried for a while; if it still
 * fails, the batch hands its uncommitted records back to kafkajs (resolves the offset back to the last one
 * committed), which fetches them again: with no further record arriving, nothing else would ever commit that tail,
 * and the group's lag would stay above zero until some later rebalance. Their second pass is absorbed (their
 * workflows exist) and commits them.
 *
 * While the group rebalances (a rejoin asked: generation.ts) the batch still commits what finished, but does not
 * retry a failed commit: the rebalance waits for this member, and the next owner's redelivery is absorbed.
 *
 * A batch's last record need not be the last offset it fetched: a transaction's commit or abort marker, and an
 * aborted transaction's records, follow it unseen (kafkajs filters them out). Once every record of the batch is
 * finished, its commit goes past them too (`lastFetched`), or the group's committed offset would stay below the
 * log end for good and the partition's lag never reach 0 (docs/contract.md §2, "Committed offsets and lag").
 *
 * Each commit is one attempt (the batch payload's commitOffsetsIfNecessary), never kafkajs's retrying
 * consumer.commitOffsets: a retry loop left running by a generation that ended would send the old offset again
 * once kafkajs had rejoined, under the new generation, and move the group's offset back.
 */
import type { Logger } from '../logger';
import type { GroupGeneration } from './generation';

const RETRY_FIRST_MS = 300;
const RETRY_MAX_MS = 5_000;

export interface BatchCommitsOptions {
  /** The batch's record offsets, in order. */
  offsets: string[];
  /**
   * The last offset the batch fetched (kafkajs's `batch.lastOffset()`): the last record's, or a later one of a
   * transaction marker or an aborted record that was filtered out. Committed past once every record is finished.
   */
  lastFetched?: string;
  /** One commit attempt of `next` (the offset after the last committed record). */
  send(next: string): Promise<void>;
  /** Tells kafkajs where the next fetch of this partition starts. */
  resolve(offset: string): void;
  /** False once a commit would be wrong or pointless: the batch stale, its generation over. */
  live(): boolean;
  /** Whether the batch's last commit is worth retrying (false while the consumer is being stopped). */
  keepTrying(): boolean;
  /** True when `err` ended the generation (it then stops this batch); see generation.ts. */
  ends(err: unknown): boolean;
  generation: GroupGeneration;
  every: number;
  /** How long the batch's last commit keeps trying. */
  lastCommitBudgetMs: number;
  log: Logger;
}

export class BatchCommits {
  private readonly done: boolean[];
  private contiguous = -1; // index of the last record of the finished prefix
  private committed = -1; // index of the last record whose offset is committed
  private attempted = -1; // index the last commit attempt covered
  private committing: Promise<void> | undefined;
  /**
   * While the batch waits for its tenant's room (batchTurn.ts) each record that finishes is committed, not every
   * `every`: a partition waiting in Kafka shows no more lag than it has.
   */
  private waiting = false;

  constructor(private readonly o: BatchCommitsOptions) {
    this.done = new Array<boolean>(o.offsets.length).fill(false);
  }

  /** Record `i` is durable (started or dead-lettered). */
  finished(i: number): void {
    this.done[i] = true;
    const before = this.contiguous;
    while (this.contiguous + 1 < this.done.length && this.done[this.contiguous + 1]) this.contiguous++;
    if (this.contiguous === before || !this.o.live()) return;
    this.resolve(this.o.offsets[this.contiguous]!);
    if (this.waiting || this.contiguous - Math.max(this.committed, this.attempted) >= this.o.every) {
      this.inBackground(0);
    }
  }

  /** The batch waits for room (true) or takes records again (false); see `waiting`. */
  waitsForRoom(waiting: boolean): void {
    this.waiting = waiting;
    if (waiting && this.contiguous > Math.max(this.committed, this.attempted)) this.inBackground(0);
  }

  /** The batch's last commit, after its records are all settled; returns early if the generation ends. */
  async finish(): Promise<void> {
    await this.settle();
    this.inBackground(this.o.lastCommitBudgetMs);
    await this.settle();
  }

  /** kafkajs's resolveOffset throws for a partition no longer assigned (a rejoin meanwhile): then nothing to do. */
  private resolve(offset: string): void {
    try {
      this.o.resolve(offset);
    } catch (err) {
      this.o.log.debug({ err, offset }, 'offset not resolved: the partition is no longer assigned');
    }
  }

  private inBackground(budgetMs: number): void {
    this.committing ??= this.commit(budgetMs).finally(() => (this.committing = undefined));
  }

  /** Resolves the offset back to the last committed record: kafkajs's next fetch of the partition starts after it. */
  private handBack(): void {
    if (!this.o.live()) return;
    const last =
      this.committed >= 0 ? this.o.offsets[this.committed]! : (BigInt(this.o.offsets[0]!) - 1n).toString();
    this.resolve(last);
  }

  /** Waits for the commit in flight, unless the generation ends first (then it can only fail). */
  private settle(): Promise<void> {
    return this.o.generation.until(this.committing);
  }

  /** The offset to commit once records up to index `upTo` are finished: past the filtered tail after the last. */
  private nextAfter(upTo: number): string {
    let next = BigInt(this.o.offsets[upTo]!) + 1n;
    if (upTo === this.o.offsets.length - 1 && this.o.lastFetched !== undefined) {
      const past = BigInt(this.o.lastFetched) + 1n;
      if (past > next) next = past;
    }
    return next.toString();
  }

  private async commit(budgetMs: number): Promise<void> {
    const started = Date.now();
    for (let delayMs = RETRY_FIRST_MS; ; delayMs = Math.min(delayMs * 2, RETRY_MAX_MS)) {
      // The prefix keeps growing while a commit is in flight: only what this one covers counts as committed.
      const upTo = this.contiguous;
      if (upTo <= this.committed || !this.o.live()) return;
      this.attempted = upTo;
      const next = this.nextAfter(upTo);
      try {
        await this.o.send(next);
        this.committed = Math.max(this.committed, upTo);
        // Records that finished during the commit, while the batch waits: one more commit covers them.
        if (this.waiting && this.contiguous > this.committed) continue;
        return;
      } catch (err) {
        if (this.o.ends(err)) return;
        if (budgetMs === 0) {
          // Commits are cumulative: a failed one is covered by the next, or by the batch's last.
          this.o.log.debug({ err, offset: next }, 'offset commit failed; the next one covers it');
          return;
        }
        if (!this.o.keepTrying() || this.o.generation.closing) {
          // The consumer is leaving or rejoining: the next owner gets these records again, which Temporal absorbs.
          this.o.log.warn(
            { err, offset: next },
            'offset commit failed while leaving or rejoining the group; records will be redelivered',
          );
          return;
        }
        if (Date.now() - started + delayMs > budgetMs) {
          this.handBack();
          this.o.log.warn(
            { err, offset: next },
            'offset commit failed; the uncommitted records are fetched again to commit them',
          );
          return;
        }
        await this.o.generation.sleep(delayMs);
        // Asked to rejoin (or over) meanwhile: no further attempt; the records' next owner gets them again.
        if (this.o.generation.closing) return;
      }
    }
  }
}
