/* eslint-disable max-lines -- the consumer loop is to be split into its own modules; until then one file */
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
 * - A heartbeat or commit answered "your group generation is over" (a coordinator that moved, a group gone on
 *   without this member) ends every batch of that generation and goes back to kafkajs, which rejoins; a heartbeat
 *   answered "rebalancing" does the same after the batches commit what finished (generation.ts). Until kafkajs
 *   has rejoined, the process is not ready.
 * - A consumer that crashes for good (kafkajs gives up on a non-retriable error, e.g. a revoked ACL) is
 *   restarted here with backoff; until it runs again the process is not ready and says why. After a batch that
 *   cannot be decoded, its partition is held (undecodable.ts) and the others consumed again.
 *
 * Over 300 lines on purpose: the consumer's lifecycle (subscribe, re-subscribe, crash restarts, holds) and the
 * batch bookkeeping share the consumer and its state; split apart they would pass that state back and forth.
 */
import type { ConsumedBatch, KafkaClient, KafkaConsumer, KafkaRecord } from '../kafka/port';
import type { RelayConfig } from '../config';
import { tenantFromTopic } from '../contract';
import { ConfigError } from '../errors';
import { groupGenerationOver, groupRebalancing, kafkaAccessProblem } from '../kafka/errors';
import { codecErrorIn } from '../kafka/codecs';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import { dispatchTopics } from './dispatchTopics';
import { TenantAdmission } from './admission';
import { BatchCommits } from './batchCommits';
import { GroupGeneration } from './generation';
import { MarkerBatches } from './markerBatches';
import { IngestMonitor } from './monitor';
import { PausedPartitions } from './pausedPartitions';
import { Semaphore } from './semaphore';
import { type StartContext, handleRecord } from './startDispatch';
import { UndecodablePartitions } from './undecodable';

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
  | 'batchSliceMs'
>;

export interface IngesterParts {
  /** Admission per tenant (admission.ts); without one, no bound. */
  admission?: TenantAdmission;
}

/**
 * How long a batch's last offset commit keeps trying (a coordinator moving after a broker's death takes tens of
 * seconds on a loaded machine, and one attempt can take kafkajs's 30 s request timeout) before the batch hands its
 * uncommitted tail back to kafkajs to fetch again (batchCommits.ts).
 */
const LAST_COMMIT_BUDGET_MS = 60_000;

/** How long a fetch waits for news while admission per tenant is on (docs/design.md, "Fair turns for tenants"). */
const ADMISSION_FETCH_WAIT_MS = 250;

export class Ingester {
  private consumer: KafkaConsumer | undefined;
  private readonly admin;
  private subscribed: string[] = [];
  private readonly ignoredTopics = new Set<string>();
  private stopping = false;
  private closed = false;
  private joined = false;
  /** What the group assigned this member at its last join: a failure elsewhere is another member's to retry. */
  private assignment: Record<string, number[]> | undefined;
  /** The consumer's current group generation; a new one at every join (generation.ts). */
  private generation = new GroupGeneration();
  /** Why the ingester cannot consume at all yet (Kafka unreachable at start, consumer crashed). */
  private problem: string | undefined;
  private readonly paused: PausedPartitions;
  private crashRestarts = 0;
  private readonly semaphore: Semaphore;
  private readonly admission: TenantAdmission;
  private watcher: NodeJS.Timeout | undefined;
  private readonly monitor: IngestMonitor;
  private readonly undecodable: UndecodablePartitions;
  /** Fetches of transaction markers alone, which kafkajs never hands over: committed past (markerBatches.ts). */
  private readonly markers: MarkerBatches;
  private restarting: Promise<void> = Promise.resolve();
  /** Batch handlers running now: stopping the consumer waits for them so their commits are not dropped. */
  private readonly batches = new Set<Promise<void>>();

  constructor(
    private readonly cfg: RelayConfig,
    private readonly kafka: KafkaClient,
    private readonly startCtx: StartContext,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
    private readonly opts: IngesterOptions,
    parts: IngesterParts = {},
  ) {
    this.admission =
      parts.admission ??
      new TenantAdmission({ maxOpen: 0, tenantMaxOpen: 0, watch: () => Promise.resolve() });
    this.admin = kafka.admin();
    this.semaphore = new Semaphore(opts.maxInFlight, opts.maxInFlightBytes);
    this.paused = new PausedPartitions(metrics.pausedPartitions);
    this.markers = new MarkerBatches(logger);
    this.undecodable = new UndecodablePartitions(kafka, this.admin, cfg.kafka.groupId, metrics, logger);
    this.monitor = new IngestMonitor(
      this.admin,
      cfg.kafka.groupId,
      metrics,
      logger,
      opts,
      () => this.subscribed,
    );
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
    this.monitor.start();
  }

  /** Ready when consuming (or waiting for a first matching topic) with no partition held paused. */
  ready(): boolean {
    return (
      !this.stopping &&
      this.problem === undefined &&
      this.paused.size === 0 &&
      !this.generation.endedByError &&
      (this.joined || this.subscribed.length === 0)
    );
  }

  readinessDetail(): string {
    if (this.stopping) return 'stopping';
    if (this.problem) return this.problem;
    if (this.generation.endedByError) return 'rejoining consumer group (its generation ended)';
    return this.paused.summary() ?? (this.joined ? 'ok' : 'joining consumer group');
  }

  private async refreshTopics(): Promise<void> {
    if (this.stopping) return;
    const topics = dispatchTopics(await this.admin.listTopics(), this.cfg.dispatchTopicPattern, (t) => {
      // Reported once per topic, not at every refresh.
      if (this.ignoredTopics.has(t)) return;
      this.ignoredTopics.add(t);
      this.logger.warn(
        { topic: t },
        'topic matches DISPATCH_TOPIC_PATTERN but is not poimen.<tenant>.dispatch; ignored',
      );
    });
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
      // With admission on, a tenant's partitions pause for room and resume when one of its dispatches closes; a
      // fetch that waits kafkajs's default 5 s for the other partitions' news would hold that resume back as long.
      ...(this.admission.bounded ? { maxWaitTimeInMs: ADMISSION_FETCH_WAIT_MS } : {}),
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => this.onGroupJoin(consumer, e.payload.memberAssignment));
    consumer.on(consumer.events.CRASH, (e) => {
      this.joined = false;
      // A crash kafkajs restarts from is an outage it rides out (WARN); one it does not is the relay's to handle.
      const level = e.payload.restart ? 'warn' : 'error';
      this.logger[level]({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
      if (e.payload.restart && consumer === this.consumer) this.paused.consumerRestarted();
      // kafkajs restarts the consumer itself after a retriable error; after any other it leaves it stopped.
      if (!e.payload.restart && consumer === this.consumer) {
        if (codecErrorIn(e.payload.error)) this.holdUndecodable(e.payload.error);
        else this.restartAfterCrash(e.payload.error);
      }
    });
    this.markers.watch(
      consumer,
      (topic, partition) =>
        consumer === this.consumer &&
        !this.stopping &&
        !this.generation.closing &&
        (this.assignment?.[topic]?.includes(partition) ?? false),
    );
    this.consumer = consumer;
    this.generation.supersede();
    this.generation = new GroupGeneration();
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.opts.partitionsConcurrently,
      eachBatch: (payload) => {
        const running = this.eachBatch(consumer, payload);
        this.batches.add(running);
        return running.finally(() => this.batches.delete(running));
      },
    });
  }

  /** kafkajs joined a generation: a new one for the batches to come, the previous one over for those still running. */
  private onGroupJoin(consumer: KafkaConsumer, assignment: Record<string, number[]>): void {
    // A consumer being stopped or replaced may still join on its way out: its join says nothing of ours.
    if (consumer !== this.consumer) return;
    this.generation.supersede();
    this.generation = new GroupGeneration();
    this.joined = true;
    this.crashRestarts = 0;
    this.assignment = assignment;
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

  /** After a batch failed to decode: hold the partitions it came from, consume the others again. */
  private holdUndecodable(err: Error): void {
    this.problem = `consumer crashed (${err.message}); finding the undecodable partition`;
    this.restarting = this.restarting
      .then(async () => {
        if (this.stopping) return;
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
    const consumer = this.consumer;
    this.consumer = undefined;
    this.joined = false;
    this.assignment = undefined;
    this.paused.clear();
    this.admission.forgetWaiters();
    // The batches in progress see the consumer replaced, take no further record, finish their in-flight starts and
    // commit them — before disconnect(): kafkajs marks the consumer stopped as disconnect() begins, and from then
    // on drops every commitOffsets, so a batch left to finish inside disconnect() would exit uncommitted.
    await Promise.allSettled([...this.batches]);
    await this.markers.settled();
    await consumer?.disconnect();
    this.generation.supersede();
    this.generation = new GroupGeneration();
  }

  private async eachBatch(consumer: KafkaConsumer, payload: ConsumedBatch): Promise<void> {
    const { batch, heartbeat, isRunning, isStale } = payload;
    const tenant = tenantFromTopic(batch.topic);
    if (tenant === undefined || batch.messages.length === 0) return;
    // A commit past this partition's transaction markers still in flight lands first (markerBatches.ts).
    await this.markers.before(batch.topic, batch.partition);
    const log = this.logger.child({ topic: batch.topic, partition: batch.partition });
    const generation = this.generation;
    const current = () => consumer === this.consumer && !this.stopping;
    /** True when `err` ended this batch's generation (the batch then stops and hands it back to kafkajs). */
    const ends = (err: unknown): boolean => {
      const over = groupGenerationOver(err);
      if (!over) return false;
      if (generation.end(over) && generation === this.generation && current()) {
        this.joined = false;
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
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset }] }],
        }),
      resolve: (offset) => payload.resolveOffset(offset),
      // A batch whose consumer is being stopped or replaced still commits what it finished (stopConsumer waits).
      live: () => !isStale() && !generation.over,
      // Retrying the batch's last commit is worth it only while this consumer stays.
      keepTrying: current,
      ends,
      generation,
      every: this.opts.commitEveryRecords,
      lastCommitBudgetMs: LAST_COMMIT_BUDGET_MS,
      log,
    });
    /** A heartbeat's answer: "rebalancing" asks this member to rejoin soon, its commits still count (generation.ts). */
    const heard = (err: unknown): void => {
      const rebalancing = groupRebalancing(err);
      if (!rebalancing) return void ends(err);
      if (generation.askRejoin(rebalancing) && generation === this.generation && current()) {
        log.info(
          { err: rebalancing },
          'the consumer group is rebalancing; committing what finished, then rejoining',
        );
      }
    };
    const beat = setInterval(() => void heartbeat().catch(heard), 3000);
    const tasks: Promise<void>[] = [];
    // A failed record ends the batch: what follows it is fetched again once the partition is resumed.
    let failed = false;
    const goOn = () => isRunning() && !isStale() && current() && !failed && !generation.closing;
    // kafkajs fetches a broker's partitions again only once every batch of its last fetch is done, so a tenant's
    // long batch would hold every other tenant's fresh records back until it ends. A batch therefore takes its
    // turn: once it has taken at least a full in-flight bound of records and its turn has lasted batchSliceMs
    // (counted from its first record, not from its wait for room), it stops taking records, commits what
    // finished and returns; its rest is fetched again with the other partitions' news (docs/design.md, "Fair
    // turns for tenants"). The minimum keeps slow starts from shrinking a turn to a record or two.
    let sliceEnd = Number.POSITIVE_INFINITY;
    const turnOver = (taken: number) => taken >= this.opts.maxInFlight && performance.now() >= sliceEnd;
    try {
      for (let i = 0; i < batch.messages.length; i++) {
        if (!goOn() || turnOver(i)) break;
        // The tenant has its bound of dispatches open: its partition waits (paused) for one to close, and the rest
        // of this batch stays in Kafka, fetched again once there is room (admission.ts).
        if (!this.admission.take(tenant)) {
          this.waitForRoom(consumer, tenant, batch.topic, batch.partition);
          break;
        }
        const message = batch.messages[i]!;
        const weight = await this.semaphore.acquire(message.value?.length ?? 0);
        // Waiting for room may have outlasted the batch's turn: a failure, a stop, a replaced consumer, its slice.
        if (!goOn() || turnOver(i)) {
          this.semaphore.release(weight);
          this.admission.giveBack(tenant);
          break;
        }
        if (i === 0) sliceEnd = performance.now() + this.opts.batchSliceMs;
        tasks.push(
          this.process(consumer, tenant, batch.topic, batch.partition, message, log)
            .then((ok) => (ok ? commits.finished(i) : void (failed = true)))
            .finally(() => this.semaphore.release(weight)),
        );
      }
      // The records in flight finish either way: their starts are durable, a redelivery of them is absorbed.
      await Promise.all(tasks);
      await commits.finish();
      // kafkajs rejoins when a batch handler throws one of these (its runner's rebalance path, not a crash), after
      // the commits above when the group is only rebalancing. Not while this consumer is being stopped or
      // replaced: a rejoin then would only delay its leaving.
      if (generation.endedByError && current()) throw generation.endedByError;
    } finally {
      clearInterval(beat);
    }
  }

  private waitForRoom(consumer: KafkaConsumer, tenant: string, topic: string, partition: number): void {
    try {
      consumer.pause([{ topic, partitions: [partition] }]);
    } catch (err) {
      // kafkajs between a crash and its restart: no group to pause in; its next fetch finds the tenant full again.
      this.logger.debug({ err, topic, partition }, 'could not pause a partition to wait for room');
    }
    // An outage whose backoff already resumed the partition is over as far as anyone knows: its record was not
    // tried again, only refused a slot. Left, it would keep the process unready until room comes back.
    this.paused.forgetResumed(topic, partition);
    this.admission.whenRoom(tenant, `${topic}/${partition}`, () => {
      // A replaced consumer forgot the pause; a partition in an outage is resumed by its own backoff.
      if (consumer !== this.consumer || this.paused.holds(topic, partition)) return;
      consumer.resume([{ topic, partitions: [partition] }]);
    });
  }

  /**
   * True when the record's outcome is durable. False when it failed (its partition is then paused and resumed
   * after a backoff, and the record fetched again: pausedPartitions.ts) or the ingester is stopping.
   */
  private async process(
    consumer: KafkaConsumer,
    tenant: string,
    topic: string,
    partition: number,
    message: KafkaRecord,
    log: Logger,
  ): Promise<boolean> {
    // The record's admission slot: held while the execution it started is open, else given back here.
    let held = false;
    const onStarted = (workflowId: string, runId: string) => {
      held = true;
      this.admission.holdUntilClosed(tenant, workflowId, runId);
    };
    try {
      const outcome = await handleRecord(this.startCtx, tenant, topic, partition, message, log, onStarted);
      this.metrics.dispatchRecords.inc({ tenant, outcome });
      if (consumer === this.consumer && this.paused.succeeded(consumer, topic, partition)) {
        log.info('infrastructure back; the partition flows again');
      }
      return true;
    } catch (err) {
      if (this.stopping) return false;
      // A consumer replaced meanwhile (topic change, crash restart) holds no pauses of ours and refetches anyway.
      if (consumer !== this.consumer) return false;
      // A rejoin meanwhile gave the partition to another member: it fetches the record again, no outage here.
      if (this.assignment && !this.assignment[topic]?.includes(partition)) return false;
      const reason = err instanceof Error ? err.message : String(err);
      const failures = this.paused.failed(consumer, topic, partition, reason);
      // Log the first failure and then every tenth, not every retry of a long outage.
      if (failures === 1 || failures % 10 === 0) {
        log.warn(
          { err, tenant, offset: message.offset, failures },
          'could not start or dead-letter record; partition paused, retrying after a backoff',
        );
      }
      return false;
    } finally {
      if (!held) this.admission.giveBack(tenant);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopping = true;
    if (this.watcher) clearInterval(this.watcher);
    this.monitor.stop();
    await this.restarting.catch(() => undefined);
    await this.stopConsumer().catch((err: unknown) =>
      this.logger.warn({ err }, 'consumer disconnect failed'),
    );
    await this.monitor.refreshLag();
    await this.admin.disconnect().catch(() => undefined);
    this.admission.close();
  }
}
