/**
 * The ingester: a thin kafkajs consumer that turns each dispatch record into a Temporal workflow start (or a
 * dead letter) and commits a record's offset only after that outcome is durable. This file owns the consumer's
 * lifecycle and its group membership; each batch the consumer hands over takes its turn in batchTurn.ts.
 *
 * - Topics are found by pattern and re-listed periodically: kafkajs resolves a RegExp subscription once, so a
 *   tenant topic created later needs a fresh subscription, which the watcher does by restarting the consumer.
 * - A join starts a new group generation (membership.ts, generation.ts); a heartbeat or commit answered "your
 *   generation is over" or "rebalancing" ends that generation's batches (batchTurn.ts), and until kafkajs has
 *   rejoined the process is not ready.
 * - A consumer that crashes for good (kafkajs gives up on a non-retriable error, e.g. a revoked ACL) is
 *   restarted here with backoff; until it runs again the process is not ready and says why. After a batch that
 *   cannot be decoded, its partition is held (undecodable.ts) and the others consumed again.
 * - Stopping or replacing the consumer waits for its batches to commit what they finished, then disconnects.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaClient, KafkaConsumer } from '../kafka/port';
import { ConfigError } from '../errors';
import { KAFKA } from '../config/vars/kafka';
import { kafkaAccessProblem } from '../kafka/errors';
import { codecErrorIn } from '../kafka/codecs';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import { dispatchTopics } from './dispatchTopics';
import { TenantAdmission } from './admission';
import { BatchTurns } from './batchTurn';
import { consumerOptions } from './consumerOptions';
import type { IngesterSettings } from './ingesterSettings';
import { GroupMembership } from './membership';
import { MarkerBatches } from './markerBatches';
import { IngestMonitor } from './monitor';
import { PausedPartitions } from './pausedPartitions';
import { Semaphore } from './semaphore';
import type { StartContext } from './startDispatch';
import { UndecodablePartitions } from './undecodable';

export interface IngesterParts {
  /** Admission per tenant (admission.ts); without one, no bound. */
  admission?: TenantAdmission;
}

export class Ingester {
  private readonly admin;
  private subscribed: string[] = [];
  private applyFailed = false; // applyTopics could not start a consumer for `subscribed`: the next listing tries
  private readonly ignoredTopics = new Set<string>();
  private closed = false;
  /** Aborted by close(): ends a crash restart's backoff wait. */
  private readonly closing = new AbortController();
  /** Its consumer, whether that has joined, its assignment and generation (membership.ts). */
  private readonly group = new GroupMembership();
  /** Why the ingester cannot consume at all yet (Kafka unreachable at start, consumer crashed). */
  private problem: string | undefined;
  private readonly paused: PausedPartitions;
  private crashRestarts = 0;
  private readonly admission: TenantAdmission;
  private watcher: NodeJS.Timeout | undefined;
  private readonly monitor: IngestMonitor;
  private readonly undecodable: UndecodablePartitions;
  /** Fetches of transaction markers alone, which kafkajs never hands over: committed past (markerBatches.ts). */
  private readonly markers: MarkerBatches;
  /** Each batch kafkajs hands over, taken in its turn (batchTurn.ts). */
  private readonly turns: BatchTurns;
  private restarting: Promise<void> = Promise.resolve();
  /** A topic listing of the watcher is out: the next waits for it. */
  private listing = false;

  constructor(
    private readonly cfg: IngesterSettings,
    private readonly kafka: KafkaClient,
    startCtx: StartContext,
    metrics: RelayMetrics,
    private readonly logger: Logger,
    parts: IngesterParts = {},
  ) {
    const opts = cfg.ingest;
    this.admission =
      parts.admission ??
      new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 0, watch: () => Promise.resolve() });
    this.admin = kafka.admin();
    this.paused = new PausedPartitions(metrics.pausedPartitions);
    this.markers = new MarkerBatches(logger);
    this.turns = new BatchTurns({
      startCtx,
      metrics,
      logger,
      opts,
      membership: this.group,
      semaphore: new Semaphore(opts.maxInFlight, opts.maxInFlightBytes),
      admission: this.admission,
      paused: this.paused,
      markers: this.markers,
    });
    this.undecodable = new UndecodablePartitions(kafka, cfg.kafka.groupId, metrics, logger);
    this.monitor = new IngestMonitor(kafka, cfg.kafka.groupId, metrics, logger, opts, () => this.subscribed);
  }

  async start(): Promise<void> {
    // Kafka may be down when the ingester starts: keep trying (not ready meanwhile) instead of crash-looping.
    for (let delayMs = 500; !this.group.stopping; delayMs = Math.min(delayMs * 2, 10_000)) {
      try {
        await this.admin.connect();
        await this.applyTopics(await this.listTopics());
        break;
      } catch (err) {
        if (this.group.stopping) return;
        // Refused credentials or certificates are not an outage: stop with one line naming the variables.
        const refused = kafkaAccessProblem(err, this.cfg.kafka);
        if (refused) throw new ConfigError(refused.variable, refused.reason);
        this.problem = `Kafka: ${err instanceof Error ? err.message : String(err)}`;
        this.logger.warn({ err }, 'cannot list topics yet; retrying');
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
    if (this.group.stopping) return; // closed during a retry's wait: no watcher, no monitor
    this.problem = undefined;
    // The listing is not queued with the consumer's restarts, only its outcome is: an admin connection that hangs
    // (its broker session expired while no token could be had) must not hold a crashed consumer's restart behind it.
    const failed = (err: unknown) => this.logger.warn({ err }, 'topic refresh failed; will retry');
    this.watcher = setInterval(() => {
      if (this.listing) return;
      this.listing = true;
      this.listTopics()
        .then((topics) => {
          this.restarting = this.restarting.then(() => this.applyTopics(topics)).catch(failed);
        }, failed)
        .finally(() => (this.listing = false));
    }, this.cfg.ingest.topicRefreshMs);
    this.monitor.start();
  }

  /** Ready when consuming (or waiting for a first matching topic) with no partition held paused. */
  ready(): boolean {
    return (
      !this.group.stopping &&
      this.problem === undefined &&
      this.paused.size === 0 &&
      !this.group.generation.endedByError &&
      (this.group.joined || this.subscribed.length === 0)
    );
  }

  readinessDetail(): string {
    if (this.group.stopping) return 'stopping';
    if (this.problem) return this.problem;
    if (this.group.generation.endedByError) return 'rejoining consumer group (its generation ended)';
    return this.paused.summary() ?? (this.group.joined ? 'ok' : 'joining consumer group');
  }

  private async listTopics(): Promise<string[]> {
    return dispatchTopics(await this.admin.listTopics(), this.cfg.dispatchTopicPattern, (t) => {
      if (this.ignoredTopics.has(t)) return; // reported once per topic, not at every refresh
      this.ignoredTopics.add(t);
      this.logger.warn(
        { topic: t },
        `topic matches ${KAFKA.DISPATCH_TOPIC_PATTERN.name} but is not poimen.<tenant>.dispatch; ignored`,
      );
    });
  }

  private async applyTopics(topics: string[]): Promise<void> {
    if (this.group.stopping || (topics.join('\n') === this.subscribed.join('\n') && !this.applyFailed))
      return;
    this.logger.info({ topics }, 'dispatch topics changed; (re)subscribing');
    await this.stopConsumer();
    this.subscribed = topics;
    if (topics.length > 0 && !this.group.stopping)
      await this.startConsumer(topics).catch((err: unknown) => {
        this.applyFailed = true;
        throw err;
      });
  }

  private async startConsumer(topics: string[]): Promise<void> {
    const consumer = this.kafka.consumer(consumerOptions(this.cfg.kafka.groupId, this.cfg.ingest));
    consumer.on(consumer.events.GROUP_JOIN, (e) => this.onGroupJoin(consumer, e.payload.memberAssignment));
    consumer.on(consumer.events.CRASH, (e) => {
      this.group.joined = false;
      // A crash kafkajs restarts from is an outage it rides out (WARN); one it does not is the relay's to handle.
      const level = e.payload.restart ? 'warn' : 'error';
      this.logger[level]({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
      if (e.payload.restart && consumer === this.group.consumer) this.paused.consumerRestarted();
      // kafkajs restarts the consumer itself after a retriable error; after any other it leaves it stopped.
      if (!e.payload.restart && consumer === this.group.consumer) {
        if (codecErrorIn(e.payload.error)) this.holdUndecodable(e.payload.error);
        else this.restartAfterCrash(e.payload.error);
      }
    });
    this.markers.watch(
      consumer,
      (topic, partition) =>
        consumer === this.group.consumer &&
        !this.group.stopping &&
        !this.group.generation.closing &&
        (this.group.assignment?.[topic]?.includes(partition) ?? false),
    );
    this.group.consumer = consumer;
    this.group.nextGeneration();
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.cfg.ingest.partitionsConcurrently,
      eachBatch: (payload) => this.turns.run(consumer, payload),
    });
  }

  /** kafkajs joined a generation: a new one for the batches to come, the previous one over for those still running. */
  private onGroupJoin(consumer: KafkaConsumer, assignment: Record<string, number[]>): void {
    // A consumer being stopped or replaced may still join on its way out: its join says nothing of ours.
    if (consumer !== this.group.consumer) return;
    this.group.nextGeneration();
    this.group.joined = true;
    this.crashRestarts = 0;
    this.group.assignment = assignment;
    // Outages of partitions that went to another member are theirs to ride out, not this process's.
    this.paused.retainAssigned(consumer, assignment);
    // Before the first fetch: a held partition must not be fetched with the others.
    const held = this.undecodable.among(assignment);
    if (held.length > 0) consumer.pause(held);
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
      // A close ends the wait: a crash loop at its 30 s backoff must not hold a SIGTERM past its grace period.
      .then(() => sleep(delayMs, undefined, { signal: this.closing.signal }).catch(() => undefined))
      .then(async () => {
        if (this.group.stopping) return;
        await this.stopConsumer();
        this.problem = undefined;
        if (this.subscribed.length > 0) await this.startConsumer(this.subscribed);
      })
      .catch((e: unknown) => {
        this.logger.warn({ err: e }, 'consumer restart failed; retrying');
        this.restartAfterCrash(e instanceof Error ? e : new Error(String(e)));
      });
  }

  /** After a batch failed to decode: hold the partitions it came from, consume the others again. */
  private holdUndecodable(err: Error): void {
    this.problem = `consumer crashed (${err.message}); finding the undecodable partition`;
    this.restarting = this.restarting
      .then(async () => {
        if (this.group.stopping) return;
        await this.stopConsumer();
        const found = await this.undecodable.find(this.subscribed, codecErrorIn(err)?.located);
        // Nothing new found (the batch is gone, or the probe missed it): an ordinary restart with backoff.
        if (found === 0) throw err;
        this.problem = undefined;
        if (this.subscribed.length > 0) await this.startConsumer(this.subscribed);
      })
      .catch((e: unknown) => this.restartAfterCrash(e instanceof Error ? e : new Error(String(e))));
  }

  private async stopConsumer(): Promise<void> {
    const consumer = this.group.consumer;
    this.group.consumer = undefined;
    this.applyFailed = false; // whoever stops it starts the next (applyTopics, a crash's restart)
    this.group.joined = false;
    this.group.assignment = undefined;
    this.paused.clear();
    this.admission.forgetWaiters();
    // The batches in progress see the consumer replaced, take no further record, finish their in-flight starts and
    // commit them — before disconnect(): kafkajs marks the consumer stopped as disconnect() begins, and from then
    // on drops every commitOffsets, so a batch left to finish inside disconnect() would exit uncommitted.
    await this.turns.settled();
    await this.markers.settled();
    await consumer?.disconnect();
    this.group.nextGeneration();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.group.stopping = true;
    this.closing.abort();
    if (this.watcher) clearInterval(this.watcher);
    this.monitor.stop();
    await this.restarting.catch(() => undefined);
    await this.stopConsumer().catch((err: unknown) =>
      this.logger.warn({ err }, 'consumer disconnect failed'),
    );
    await this.monitor.close();
    await this.admin.disconnect().catch(() => undefined);
    this.admission.close();
  }
}
