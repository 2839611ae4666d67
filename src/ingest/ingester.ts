/**
 * The ingester: a thin kafkajs consumer that turns each dispatch record into a Temporal workflow start (or a
 * dead letter) and commits a record's offset only after that outcome is durable.
 *
 * - Topics are found by pattern and re-listed periodically: kafkajs resolves a RegExp subscription once, so a
 *   tenant topic created later needs a fresh subscription, which the watcher does by restarting the consumer.
 * - Records of a batch run concurrently under one process-wide bound; the committed offset is always the end
 *   of the contiguous completed prefix, so nothing is skipped and nothing is committed early.
 * - An infrastructure failure (Temporal or Kafka down) pauses the record's partition and ends its batch with the
 *   record unresolved; after a backoff the partition is resumed and the record fetched again
 *   (pausedPartitions.ts). No handler waits out an outage, so no partition holds up the others of its broker's
 *   fetch; no error escapes the handler, so kafkajs never restarts the consumer into a crash loop.
 * - A consumer that crashes for good (kafkajs gives up on a non-retriable error, e.g. a revoked ACL) is
 *   restarted here with backoff; until it runs again the process is not ready and says why.
 */
import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import type { RelayConfig } from '../config';
import { tenantFromTopic, topics } from '../contract';
import { ConfigError } from '../errors';
import { kafkaAccessProblem } from '../kafka/client';
import { dlqBacklog } from '../ops/dlq';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import { PausedPartitions } from './pausedPartitions';
import { Semaphore } from './semaphore';
import { type StartContext, handleRecord } from './startDispatch';

export type IngesterOptions = Pick<
  RelayConfig['ingest'],
  | 'maxInFlight'
  | 'maxInFlightBytes'
  | 'partitionsConcurrently'
  | 'topicRefreshMs'
  | 'lagRefreshMs'
  | 'commitEveryRecords'
  | 'dlqRefreshMs'
  | 'fetchMaxBytes'
  | 'fetchMaxBytesPerPartition'
  | 'sessionTimeoutMs'
>;

export class Ingester {
  private consumer: Consumer | undefined;
  private readonly admin;
  private subscribed: string[] = [];
  private readonly ignoredTopics = new Set<string>();
  private stopping = false;
  private closed = false;
  private joined = false;
  /** Why the ingester cannot consume at all yet (Kafka unreachable at start, consumer crashed). */
  private problem: string | undefined;
  private readonly paused: PausedPartitions;
  private crashRestarts = 0;
  private readonly semaphore: Semaphore;
  private watcher: NodeJS.Timeout | undefined;
  private lagTimer: NodeJS.Timeout | undefined;
  private dlqTimer: NodeJS.Timeout | undefined;
  private restarting: Promise<void> = Promise.resolve();

  constructor(
    private readonly cfg: RelayConfig,
    private readonly kafka: Kafka,
    private readonly startCtx: StartContext,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
    private readonly opts: IngesterOptions,
  ) {
    this.admin = kafka.admin();
    this.semaphore = new Semaphore(opts.maxInFlight, opts.maxInFlightBytes);
    this.paused = new PausedPartitions(metrics.pausedPartitions);
  }

  async start(): Promise<void> {
    // Kafka may be down when the ingester starts: keep trying (not ready meanwhile) instead of crash-looping.
    for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 10_000)) {
      try {
        await this.admin.connect();
        await this.refreshTopics();
        break;
      } catch (err) {
        if (this.stopping) return;
        // Refused credentials or certificates are not an outage: stop with one line naming the variables.
        const refused = kafkaAccessProblem(err, this.cfg.kafka);
        if (refused) throw new ConfigError(refused.variable, refused.reason);
        this.problem = `Kafka: ${err instanceof Error ? err.message : String(err)}`;
        this.logger.warn({ err }, 'cannot list topics yet; retrying');
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
    this.problem = undefined;
    this.watcher = setInterval(() => {
      this.restarting = this.restarting
        .then(() => this.refreshTopics())
        .catch((err: unknown) => {
          this.logger.warn({ err }, 'topic refresh failed; will retry');
        });
    }, this.opts.topicRefreshMs);
    this.lagTimer = setInterval(() => void this.refreshLag(), this.opts.lagRefreshMs);
    let dlqRunning = false;
    this.dlqTimer = setInterval(() => {
      if (dlqRunning) return;
      dlqRunning = true;
      void this.refreshDlqBacklog().finally(() => (dlqRunning = false));
    }, this.opts.dlqRefreshMs);
  }

  /** Ready when consuming (or waiting for a first matching topic) with no partition held paused. */
  ready(): boolean {
    return (
      !this.stopping &&
      this.problem === undefined &&
      this.paused.size === 0 &&
      (this.joined || this.subscribed.length === 0)
    );
  }

  readinessDetail(): string {
    if (this.stopping) return 'stopping';
    if (this.problem) return this.problem;
    return this.paused.summary() ?? (this.joined ? 'ok' : 'joining consumer group');
  }

  private matchingTopics(all: string[]): string[] {
    return all
      .filter((t) => this.cfg.dispatchTopicPattern.test(t))
      .filter((t) => {
        if (tenantFromTopic(t) !== undefined) return true;
        // Never consumed: there is no valid tenant to relay it under, nor a tenant DLQ to dead-letter it to.
        // Reported once per topic, not at every refresh.
        if (!this.ignoredTopics.has(t)) {
          this.ignoredTopics.add(t);
          this.logger.warn(
            { topic: t },
            'topic matches DISPATCH_TOPIC_PATTERN but is not poimen.<tenant>.dispatch; ignored',
          );
        }
        return false;
      })
      .sort();
  }

  private async refreshTopics(): Promise<void> {
    if (this.stopping) return;
    const topics = this.matchingTopics(await this.admin.listTopics());
    if (topics.join('\n') === this.subscribed.join('\n')) return;
    this.logger.info({ topics }, 'dispatch topics changed; (re)subscribing');
    await this.stopConsumer();
    this.subscribed = topics;
    if (topics.length > 0 && !this.stopping) await this.startConsumer(topics);
  }

  private async startConsumer(topics: string[]): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.cfg.kafka.groupId,
      allowAutoTopicCreation: false,
      // Bounded memory: at most this much fetched per partition per round (kafkajs #526).
      maxBytesPerPartition: this.opts.fetchMaxBytesPerPartition,
      maxBytes: this.opts.fetchMaxBytes,
      // A crashed ingester's partitions wait this long for a new owner; heartbeats at a tenth of it.
      sessionTimeout: this.opts.sessionTimeoutMs,
      heartbeatInterval: Math.max(1000, Math.floor(this.opts.sessionTimeoutMs / 10)),
      retry: { retries: 10 },
    });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      this.joined = true;
      this.crashRestarts = 0;
    });
    consumer.on(consumer.events.CRASH, (e) => {
      this.joined = false;
      this.logger.error({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
      // kafkajs restarts the consumer itself after a retriable error; after any other it leaves it stopped.
      if (!e.payload.restart && consumer === this.consumer) this.restartAfterCrash(e.payload.error);
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.opts.partitionsConcurrently,
      eachBatch: (payload) => this.eachBatch(consumer, payload),
    });
  }

  /**
   * Restarts a consumer kafkajs gave up on, with backoff: the cause (an ACL revoked, a topic deleted and made
   * anew) is often fixed by an operator without touching the relay, and a replica that silently stops consuming
   * while its liveness probe stays green is the worst outcome.
   */
  private restartAfterCrash(err: Error): void {
    const delayMs = Math.min(1000 * 2 ** this.crashRestarts, 30_000);
    this.crashRestarts++;
    this.problem = `consumer crashed (${err.name}: ${err.message}); restarting in ${delayMs} ms`;
    this.restarting = this.restarting
      .then(() => new Promise((r) => setTimeout(r, delayMs)))
      .then(async () => {
        if (this.stopping) return;
        await this.stopConsumer();
        this.problem = undefined;
        if (this.subscribed.length > 0) await this.startConsumer(this.subscribed);
      })
      .catch((e: unknown) => {
        this.logger.warn({ err: e }, 'consumer restart failed; retrying');
        this.restartAfterCrash(e instanceof Error ? e : new Error(String(e)));
      });
  }

  private async stopConsumer(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = undefined;
    this.joined = false;
    this.paused.clear();
    // disconnect() waits for the batch in progress, which finishes its in-flight starts and commits.
    await consumer?.disconnect();
  }

  private async eachBatch(consumer: Consumer, payload: EachBatchPayload): Promise<void> {
    const { batch, heartbeat, isRunning, isStale, resolveOffset } = payload;
    const tenant = tenantFromTopic(batch.topic);
    if (tenant === undefined || batch.messages.length === 0) return;
    const log = this.logger.child({ topic: batch.topic, partition: batch.partition });

    const done = new Array<boolean>(batch.messages.length).fill(false);
    let committedIdx = -1; // index of the last message whose offset is committed
    let contiguous = -1; // index of the last message of the completed prefix
    const commit = async () => {
      // The prefix keeps growing while the commit is in flight: only what this commit covers counts as committed.
      const upTo = contiguous;
      if (upTo <= committedIdx || isStale()) return;
      const next = (BigInt(batch.messages[upTo]!.offset) + 1n).toString();
      try {
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
        committedIdx = Math.max(committedIdx, upTo);
      } catch (err) {
        // Commits are cumulative: a failed one is covered by the next; at worst records are redelivered,
        // which Temporal absorbs. Letting it escape would restart the consumer for nothing.
        log.warn({ err, offset: next }, 'offset commit failed; will commit with the next one');
      }
    };
    const beat = setInterval(() => void heartbeat().catch(() => undefined), 3000);
    const tasks: Promise<void>[] = [];
    // A failed record ends the batch: what follows it is fetched again once the partition is resumed.
    let failed = false;
    try {
      for (let i = 0; i < batch.messages.length; i++) {
        if (!isRunning() || isStale() || this.stopping || failed) break;
        const message = batch.messages[i]!;
        const weight = await this.semaphore.acquire(message.value?.length ?? 0);
        if (failed) {
          this.semaphore.release(weight);
          break;
        }
        tasks.push(
          this.process(consumer, tenant, batch.topic, batch.partition, message, log)
            .then((ok) => {
              if (!ok) {
                failed = true;
                return;
              }
              done[i] = true;
              const before = contiguous;
              while (contiguous + 1 < done.length && done[contiguous + 1]) contiguous++;
              // kafkajs fetches the next batch from the last resolved offset, so resolve as the prefix grows.
              if (contiguous > before) resolveOffset(batch.messages[contiguous]!.offset);
            })
            .finally(() => this.semaphore.release(weight)),
        );
        if (contiguous - committedIdx >= this.opts.commitEveryRecords) await commit();
      }
      await Promise.all(tasks);
      await commit();
    } finally {
      clearInterval(beat);
    }
  }

  /**
   * True when the record's outcome is durable. False when it failed (its partition is then paused and resumed
   * after a backoff, and the record fetched again: pausedPartitions.ts) or the ingester is stopping.
   */
  private async process(
    consumer: Consumer,
    tenant: string,
    topic: string,
    partition: number,
    message: KafkaMessage,
    log: Logger,
  ): Promise<boolean> {
    try {
      const outcome = await handleRecord(this.startCtx, tenant, topic, partition, message);
      this.metrics.dispatchRecords.inc({ tenant, outcome });
      if (consumer === this.consumer && this.paused.succeeded(consumer, topic, partition)) {
        log.info('infrastructure back; the partition flows again');
      }
      return true;
    } catch (err) {
      if (this.stopping) return false;
      // A consumer replaced meanwhile (topic change, crash restart) holds no pauses of ours and refetches anyway.
      if (consumer !== this.consumer) return false;
      const reason = err instanceof Error ? err.message : String(err);
      const failures = this.paused.failed(consumer, topic, partition, reason);
      // Log the first failure and then every tenth, not every retry of a long outage.
      if (failures === 1 || failures % 10 === 0) {
        log.warn(
          { err, offset: message.offset, failures },
          'could not start or dead-letter record; partition paused, retrying after a backoff',
        );
      }
      return false;
    }
  }

  private async refreshLag(): Promise<void> {
    const topics = this.subscribed;
    if (topics.length === 0) return;
    try {
      const committed = await this.admin.fetchOffsets({ groupId: this.cfg.kafka.groupId, topics });
      for (const t of committed) {
        const watermarks = await this.admin.fetchTopicOffsets(t.topic);
        for (const p of t.partitions) {
          const w = watermarks.find((x) => x.partition === p.partition);
          if (!w) continue;
          const high = BigInt(w.high);
          const base = BigInt(p.offset) >= 0n ? BigInt(p.offset) : BigInt(w.low);
          this.metrics.inboxLag.set(
            { topic: t.topic, partition: String(p.partition) },
            Number(high > base ? high - base : 0n),
          );
        }
      }
    } catch (err) {
      this.logger.debug({ err }, 'lag refresh failed');
    }
  }

  /** DLQ backlog of each tenant this ingester serves: records not yet processed by `dlq replay`, and the oldest's age. */
  private async refreshDlqBacklog(): Promise<void> {
    for (const topic of this.subscribed) {
      const tenant = tenantFromTopic(topic);
      if (tenant === undefined) continue;
      const dlqTopic = topics.dlq(tenant);
      try {
        const { lag, oldestAgeSeconds } = await dlqBacklog(this.admin, dlqTopic, Date.now());
        this.metrics.dlqConsumerLag.set({ topic: dlqTopic }, lag);
        this.metrics.dlqOldestAge.set({ topic: dlqTopic }, oldestAgeSeconds);
      } catch (err) {
        // A tenant without a DLQ topic yet has no backlog; anything else is retried next round.
        this.logger.debug({ err, topic: dlqTopic }, 'DLQ backlog refresh failed');
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopping = true;
    if (this.watcher) clearInterval(this.watcher);
    if (this.lagTimer) clearInterval(this.lagTimer);
    if (this.dlqTimer) clearInterval(this.dlqTimer);
    await this.restarting.catch(() => undefined);
    await this.stopConsumer().catch((err: unknown) =>
      this.logger.warn({ err }, 'consumer disconnect failed'),
    );
    await this.refreshLag();
    await this.admin.disconnect().catch(() => undefined);
  }
}
