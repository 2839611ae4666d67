/**
 * One batch's turn: the records kafkajs fetched for one partition, taken in order while the batch may go on,
 * each started (or dead-lettered) under the process-wide in-flight bound and its tenant's admission, and
 * committed as the contiguous completed prefix grows (batchCommits.ts), so nothing is skipped and nothing is
 * committed early.
 *
 * - A long batch hands its turn back to kafkajs after batchSliceMs, so other tenants' fresh records are fetched
 *   too, and goes on from memory with its partition paused; so does a batch whose tenant has its share of
 *   dispatches open, once a slot is free (admission.ts). Its partition is fetched again only once the batch is
 *   done. What such batches keep is bounded (keptBatches.ts); past the bound, or once an operator pauses the
 *   tenant, the batch ends instead and its rest is fetched again once there is room.
 * - A record whose start fails on infrastructure (Temporal or Kafka down) ends the batch with the record
 *   unresolved; its partition is paused and resumed after a backoff (pausedPartitions.ts). No error escapes the
 *   handler, so kafkajs never restarts the consumer into a crash loop.
 * - A heartbeat or commit answered "your generation is over" ends the batch and hands the answer back to kafkajs,
 *   which rejoins; "rebalancing" does the same once the batch has committed what finished (generation.ts).
 */
import type { ConsumedBatch, KafkaConsumer } from '../kafka/port';
import { tenantFromTopic } from '../contract';
import { groupGenerationOver, groupRebalancing } from '../kafka/errors';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import type { TenantAdmission } from './admission';
import { BatchCommits } from './batchCommits';
import { KeptBatches } from './keptBatches';
import type { MarkerBatches } from './markerBatches';
import type { GroupMembership } from './membership';
import type { PausedPartitions } from './pausedPartitions';
import type { Semaphore } from './semaphore';
import { type DispatchRecord, type StartContext, handleRecord } from './startDispatch';

/**
 * How long a batch's last offset commit keeps trying (a coordinator moving after a broker's death takes tens of
 * seconds on a loaded machine, and one attempt can take kafkajs's 30 s request timeout) before the batch hands its
 * uncommitted tail back to kafkajs to fetch again (batchCommits.ts).
 */
const LAST_COMMIT_BUDGET_MS = 60_000;

/** What a batch's turn works with: the ingester's shared bounds and state (ingester.ts). */
export interface BatchTurnParts {
  startCtx: StartContext;
  metrics: RelayMetrics;
  logger: Logger;
  opts: { maxInFlight: number; commitEveryRecords: number; batchSliceMs: number; fetchMaxBytes: number };
  membership: GroupMembership;
  semaphore: Semaphore;
  admission: TenantAdmission;
  paused: PausedPartitions;
  markers: MarkerBatches;
}

export class BatchTurns {
  /**
   * Batches running now, those going on from memory included: stopping the consumer waits for them so their
   * commits are not dropped.
   */
  private readonly running = new Set<Promise<void>>();

  private readonly kept: KeptBatches;

  constructor(private readonly parts: BatchTurnParts) {
    this.kept = new KeptBatches({
      // Two fetches' worth: a fetch's response a little over the bound still fits beside another.
      maxBytes: 2 * parts.opts.fetchMaxBytes,
      gauge: parts.metrics.keptFetchBytes,
      membership: parts.membership,
      paused: parts.paused,
      admission: parts.admission,
      logger: parts.logger,
    });
  }

  /**
   * The batch's turn, as kafkajs's eachBatch handler: settles once the batch is done or has handed its turn back
   * (its partition paused, the batch going on from memory).
   */
  run(consumer: KafkaConsumer, payload: ConsumedBatch): Promise<void> {
    let handBack!: () => void;
    const handedBack = new Promise<void>((resolve) => (handBack = resolve));
    const running = this.take(consumer, payload, handBack);
    this.running.add(running);
    void running.then(
      () => this.running.delete(running),
      () => this.running.delete(running),
    );
    return Promise.race([running, handedBack]);
  }

  /** Once every batch running now has finished, its records in flight included, and committed what finished. */
  async settled(): Promise<void> {
    this.kept.wakeAll();
    await Promise.allSettled([...this.running]);
  }

  private async take(consumer: KafkaConsumer, payload: ConsumedBatch, handBack: () => void): Promise<void> {
    const { membership, admission, semaphore, opts } = this.parts;
    const { batch, heartbeat, isRunning, isStale } = payload;
    const tenant = tenantFromTopic(batch.topic);
    if (tenant === undefined || batch.messages.length === 0) return;
    const { topic, partition } = batch;
    const at = { topic, partition };
    // A commit past this partition's transaction markers still in flight lands first (markerBatches.ts).
    await this.parts.markers.before(topic, partition);
    const log = this.parts.logger.child({ topic, partition });
    const generation = membership.generation;
    const current = () => membership.current(consumer);
    /** True when `err` ended this batch's generation (the batch then stops and hands it back to kafkajs). */
    const ends = (err: unknown): boolean => {
      const over = groupGenerationOver(err);
      if (!over) return false;
      if (generation.end(over) && generation === membership.generation && current()) {
        membership.joined = false;
        log.warn(
          { err: over },
          'the consumer group moved on without this member; ending its batches to rejoin',
        );
      }
      return true;
    };
    const commits = new BatchCommits({
      offsets: batch.messages.map((m) => m.offset),
      // Transaction markers and aborted records after the last record: committed past once all are finished.
      lastFetched: batch.lastOffset(),
      send: (offset) =>
        payload.commitOffsetsIfNecessary({
          topics: [{ topic, partitions: [{ partition, offset }] }],
        }),
      resolve: (offset) => payload.resolveOffset(offset),
      // A batch whose consumer is being stopped or replaced still commits what it finished (ingester.ts waits).
      live: () => !isStale() && !generation.over,
      // Retrying the batch's last commit is worth it only while this consumer stays.
      keepTrying: current,
      ends,
      generation,
      every: opts.commitEveryRecords,
      lastCommitBudgetMs: LAST_COMMIT_BUDGET_MS,
      log,
    });
    /** A heartbeat's answer: "rebalancing" asks this member to rejoin soon, its commits still count (generation.ts). */
    const heard = (err: unknown): void => {
      const rebalancing = groupRebalancing(err);
      if (!rebalancing) return void ends(err);
      if (generation.askRejoin(rebalancing) && generation === membership.generation && current()) {
        log.info(
          { err: rebalancing },
          'the consumer group is rebalancing; committing what finished, then rejoining',
        );
      }
    };
    // Unref: a batch kept waiting for room must not be what keeps a stopping process alive.
    const beat = setInterval(() => void heartbeat().catch(heard), 3000).unref();
    const tasks: Promise<void>[] = [];
    // A failed record ends the batch: what follows it is fetched again once the partition is resumed.
    let failed = false;
    /** Ends the batch's wait for room, while it waits. */
    let stopWaiting: (() => void) | undefined;
    /** The batch ended for want of room (none to keep it, or none for long): its partition waits paused. */
    let waitsInKafka = false;
    const goOn = () => isRunning() && !isStale() && current() && !failed && !generation.closing;
    // kafkajs fetches a broker's partitions again only once every batch of its last fetch is done. So once a batch
    // has taken a full in-flight bound (so slow starts do not shrink a turn to a record or two) and batchSliceMs
    // passed since its first record, it hands the turn back and goes on from memory with its partition paused,
    // and the other tenants' news is fetched meanwhile (design.md, "Fair turns for tenants").
    let sliceEnd = Number.POSITIVE_INFINITY;
    /** Set once the batch has handed its turn back and goes on from memory: lets go of what it keeps. */
    let letGo: (() => boolean) | undefined;
    const turnOver = (taken: number) =>
      letGo === undefined && taken >= opts.maxInFlight && performance.now() >= sliceEnd;
    /** Hands the turn back and keeps the rest; false when the rest does not fit (it is then fetched again). */
    const keepRest = (): boolean => {
      if (letGo) return true;
      letGo = this.kept.keep(consumer, at, batch.messages);
      if (letGo) handBack();
      return letGo !== undefined;
    };
    try {
      for (let i = 0; i < batch.messages.length;) {
        if (!goOn() || (turnOver(i) && !keepRest())) break;
        // The tenant has its share of dispatches open: the batch waits (its partition paused) for one to close.
        if (!admission.take(tenant)) {
          // Paused by an operator (a pause may last days), or too much kept already: the batch ends, and its rest
          // stays in Kafka, fetched again once there is room (admission.ts).
          if (admission.paused(tenant) || !keepRest()) {
            waitsInKafka = true;
            break;
          }
          commits.waitsForRoom(true);
          const waited = await this.kept.room(tenant, at, generation, (wake) => (stopWaiting = wake));
          stopWaiting = undefined;
          commits.waitsForRoom(false);
          if (waited === 'woken') continue;
          // No room for long (its dispatches stay open: its API down): the batch lets its fetch go, waits in Kafka.
          waitsInKafka = true;
          break;
        }
        const message = batch.messages[i]!;
        const weight = await semaphore.acquire(message.value?.length ?? 0);
        // Waiting for room may have outlasted the batch's turn: a failure, a stop, a replaced consumer, its slice,
        // or the tenant paused meanwhile (its partition then waits for the resume).
        if (!goOn() || (turnOver(i) && !keepRest()) || admission.paused(tenant)) {
          semaphore.release(weight);
          admission.giveBack(tenant);
          break;
        }
        if (i === 0) sliceEnd = performance.now() + opts.batchSliceMs;
        const index = i++;
        tasks.push(
          this.process(consumer, { tenant, topic, partition, message }, log)
            .then((ok) => {
              if (ok) return commits.finished(index);
              failed = true;
              // The batch ends: a wait for room would hold its partition's outage past its backoff.
              stopWaiting?.();
            })
            .finally(() => semaphore.release(weight)),
        );
      }
      // The records in flight finish either way: their starts are durable, a redelivery of them is absorbed.
      await Promise.all(tasks);
      await commits.finish();
      // kafkajs rejoins when a batch handler throws one of these (its runner's rebalance path, not a crash), after
      // the commits above when the group is only rebalancing. Not while this consumer is being stopped or
      // replaced: a rejoin then would only delay its leaving. Nor once the turn was handed back: kafkajs's own
      // heartbeat or fetch hears the same answer.
      if (!letGo && generation.endedByError && current()) throw generation.endedByError;
    } finally {
      clearInterval(beat);
      // Its rest waits in Kafka for room (or the tenant's resume), not fetched again now; not for a consumer replaced
      // or stopping (it holds no pause of ours), nor once another run's batch holds the partition (keptBatches.ts).
      const waits = (waitsInKafka || admission.paused(tenant)) && current();
      const own = letGo ? this.kept.done(consumer, at, letGo, { resume: !waits }) : this.kept.takeOver(at);
      if (waits && own) this.waitForRoom(consumer, tenant, topic, partition);
    }
  }

  private waitForRoom(consumer: KafkaConsumer, tenant: string, topic: string, partition: number): void {
    const { membership, paused } = this.parts;
    try {
      consumer.pause([{ topic, partitions: [partition] }]);
    } catch (err) {
      // kafkajs between a crash and its restart: no group to pause in; its next fetch finds the tenant full again.
      this.parts.logger.debug({ err, topic, partition }, 'could not pause a partition to wait for room');
    }
    // An outage whose backoff already resumed the partition, its record not tried again, is over as far as anyone
    // knows: its record was only refused a slot. Left, it would keep the process unready until room comes back.
    paused.forgetResumed(topic, partition);
    this.parts.admission.whenRoom(tenant, `${topic}/${partition}`, () => {
      // A replaced consumer forgot the pause; a partition in an outage is resumed by its own backoff.
      if (consumer !== membership.consumer || paused.holds(topic, partition)) return;
      // Through the kept batches: a later batch of the partition may be kept and running by now.
      this.kept.pausable(consumer, { topic, partition }).resume([{ topic, partitions: [partition] }]);
    });
  }

  /**
   * True when the record's outcome is durable. False when it failed (its partition is then paused and resumed
   * after a backoff, and the record fetched again: pausedPartitions.ts) or the ingester is stopping.
   */
  private async process(consumer: KafkaConsumer, record: DispatchRecord, log: Logger): Promise<boolean> {
    const { tenant, topic, partition, message } = record;
    const { membership, admission, paused } = this.parts;
    // Through the kept batches: an outage's resume waits for the end of the partition's kept batch.
    const pausable = this.kept.pausable(consumer, { topic, partition });
    // The record's admission slot: held while the execution it started is open, else given back here.
    let held = false;
    const onStarted = (workflowId: string, runId: string) => {
      held = true;
      admission.holdUntilClosed(tenant, workflowId, runId);
    };
    try {
      paused.trying(topic, partition);
      const outcome = await handleRecord(this.parts.startCtx, record, { log, onStarted });
      this.parts.metrics.dispatchRecords.inc({ tenant, outcome });
      if (consumer === membership.consumer && paused.succeeded(pausable, topic, partition)) {
        log.info('infrastructure back; the partition flows again');
      }
      return true;
    } catch (err) {
      if (membership.stopping) return false;
      // A consumer replaced meanwhile (topic change, crash restart) holds no pauses of ours and refetches anyway.
      if (consumer !== membership.consumer) return false;
      // A rejoin meanwhile gave the partition to another member: it fetches the record again, no outage here.
      if (membership.assignment && !membership.assignment[topic]?.includes(partition)) return false;
      const reason = err instanceof Error ? err.message : String(err);
      const failures = paused.failed(pausable, topic, partition, reason);
      // Log the first failure and then every tenth, not every retry of a long outage.
      if (failures === 1 || failures % 10 === 0) {
        log.warn(
          { err, tenant, offset: message.offset, failures },
          'could not start or dead-letter record; partition paused, retrying after a backoff',
        );
      }
      return false;
    } finally {
      if (!held) admission.giveBack(tenant);
    }
  }
}
