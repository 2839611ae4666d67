/**
 * Follows the pause topic (contract §2, "Pausing a tenant") for one process: every ingester reads every pause before
 * it consumes a record (every worker before it polls), then learns a new one within about a second (docs/design.md, "Pausing a tenant"). The topic's
 * names and its writer: ./tenantPauses.ts; what its records make of a tenant's pause: ./pauseState.ts; what a pause
 * holds back: ingest/admission.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import { TENANT_PAUSES_GROUP_PREFIX, TENANT_PAUSES_TOPIC } from '../contract/names';
import type { TenantPause } from '../contract/tenantPause';
import { logsRepeat } from '../logger';
import { COORDINATOR_WAIT_MS } from './coordinator';
import { groupCoordinatorNotReady } from './errors';
import { type PauseStateOptions, TenantPauseState } from './pauseState';
import { pauseTopicExists, pauseTopicRefusal } from './pauseTopic';
import { watermarks } from './readRange';

export interface TenantPauseFollowerOptions extends PauseStateOptions {
  /** How often a missing topic is looked for again (it appears with the first `tenant pause`). */
  recheckMs?: number;
  /** What an error is when waiting cannot cure it (credentials, certificates): `start` rejects with it. */
  refusal?: (err: unknown) => Error | undefined;
  /** The throwaway groups' prefix (default TENANT_PAUSES_GROUP_PREFIX). */
  groupPrefix?: string;
  /** A one-shot read (a command's): `start` rejects at the first failure instead of asking again. */
  once?: boolean;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 10_000;
/** Looks again that fail in a row before the ingester is unready for them (one request's hiccup is not). */
const UNREADY_AFTER_FAILURES = 3;
/** How long a one-shot read (a command's) may take. */
const ONCE_TIMEOUT_MS = 60_000;
/** The pauses are not known yet: why, for readiness. */
const NOT_YET_READ = 'reading tenant pauses';

/** Readiness text for a failure of Kafka's: it names Kafka first, as the ingester's own outage does. */
function kafkaProblem(err: unknown, doing: string): string {
  return `Kafka: ${err instanceof Error ? err.message : String(err)} (${doing})`;
}

/**
 * Follows the pause topic for one process, through a throwaway consumer group of its own (every process reads every
 * pause; kafkajs reads only through groups), deleted at close. Until `start` has resolved the process knows no pause
 * and must consume nothing.
 */
export class TenantPauseFollower {
  private readonly state: TenantPauseState;
  /** Per partition, the next offset to read: where a rejoin (a restart after a crash) seeks, so nothing is read twice. */
  private readonly next = new Map<number, bigint>();
  private readonly admin: Admin;
  private consumer: Consumer | undefined;
  private groupId: string | undefined;
  private recheck: NodeJS.Timeout | undefined;
  /** Ends the read under way (resolved) when the follower is closed meanwhile. */
  private abandonRead: (() => void) | undefined;
  private closed = false;
  /** A look again is under way (the interval does not start a second). */
  private following = false;
  private failures = 0;
  /** Looks again that failed in a row. */
  private lookFailures = 0;
  /** Why the pauses are not known (not read yet, or no longer followed); undefined while they are. */
  private problem: string | undefined = NOT_YET_READ;

  constructor(
    private readonly kafka: Kafka,
    private readonly o: TenantPauseFollowerOptions,
  ) {
    // Each call once: the follower asks again itself, and "no such topic" must come back at once, not retried.
    this.admin = kafka.admin({ retry: { retries: 0 } });
    this.state = new TenantPauseState(o);
  }

  /** The tenant's pause while it is paused; undefined when it is not. */
  pauseOf(tenant: string): TenantPause | undefined {
    return this.state.pauseOf(tenant);
  }

  /** Every tenant's latest pause read so far. */
  all(): Map<string, TenantPause> {
    return this.state.all();
  }

  /** Why the pauses are not known now (not read yet, or no longer followed); undefined while they are. */
  get notYetRead(): string | undefined {
    return this.problem;
  }

  /** close() was called: whoever waited for `start` stops too. */
  get stopped(): boolean {
    return this.closed;
  }

  /**
   * Resolves once every pause written before it was called has been read, or at once when the topic does not exist
   * yet (then it is looked for every `recheckMs`). Kafka unreachable: asks again with backoff; rejects only with a
   * refusal (`refusal`, or a topic it may not Describe) or, `once`, at the first failure. A close() ends it.
   */
  async start(): Promise<void> {
    for (let delayMs = RETRY_MIN_MS; !this.closed; delayMs = Math.min(delayMs * 2, RETRY_MAX_MS)) {
      try {
        await this.admin.connect();
        if (await pauseTopicExists(this.admin)) await this.follow();
        else {
          this.problem = undefined;
          this.lookAgain();
        }
        return;
      } catch (err) {
        await this.stopConsumer();
        if (this.closed) return;
        const refused = this.refusal(err);
        if (refused) throw refused;
        if (this.o.once) throw err;
        this.problem = kafkaProblem(err, NOT_YET_READ);
        this.failed(err, 'cannot read the tenant pauses yet; retrying');
        await new Promise((r) => setTimeout(r, delayMs).unref());
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.recheck) clearInterval(this.recheck);
    this.recheck = undefined;
    this.abandonRead?.();
    await this.stopConsumer();
    await this.admin.disconnect().catch(() => undefined);
  }

  private refusal(err: unknown): Error | undefined {
    return this.o.refusal?.(err) ?? pauseTopicRefusal(err);
  }

  /** A missing topic (or a follow that broke after start) is looked for again until it is followed. */
  private lookAgain(): void {
    if (this.recheck || this.closed) return;
    this.recheck = setInterval(() => {
      if (this.following) return;
      this.following = true;
      pauseTopicExists(this.admin)
        .then(async (exists) => {
          if (this.closed) return;
          this.lookFailures = 0;
          if (!exists) return void (this.problem = undefined); // still no pause written: none to miss
          await this.follow();
          if (this.recheck) clearInterval(this.recheck);
          this.recheck = undefined;
        })
        .catch(async (err: unknown) => {
          await this.stopConsumer();
          if (this.closed) return;
          // A pause written meanwhile would not be seen: unready, saying why, once it is not one request's hiccup.
          if (++this.lookFailures >= UNREADY_AFTER_FAILURES)
            this.problem = kafkaProblem(err, 'tenant pauses not followed');
          this.failed(err, 'cannot follow the tenant pauses; trying again');
        })
        .finally(() => (this.following = false));
    }, this.o.recheckMs ?? 5000);
    this.recheck.unref();
  }

  /**
   * Joins a group of its own, reads from where it stopped (the start at first), and resolves once the log's end as
   * of now has been read: a fetch's last offset counts, so transaction markers and aborted records at the end (which
   * kafkajs never hands over) end the read too.
   */
  private async follow(): Promise<void> {
    const ends = new Map<number, bigint>();
    for (const [p, { high }] of await watermarks(this.admin, TENANT_PAUSES_TOPIC)) {
      if ((this.next.get(p) ?? 0n) < high) ends.set(p, high);
    }
    if (this.closed) return;
    let settled = false;
    let caughtUp!: () => void;
    let gaveUp!: (err: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      caughtUp = () => ((settled = true), resolve());
      gaveUp = (err) => ((settled = true), reject(err));
    });
    this.abandonRead = caughtUp;
    const advanced = (partition: number, nextOffset: bigint) => {
      if (nextOffset > (this.next.get(partition) ?? 0n)) this.next.set(partition, nextOffset);
      const end = ends.get(partition);
      if (end !== undefined && nextOffset >= end) ends.delete(partition);
      if (ends.size === 0 && !settled) caughtUp();
    };
    if (ends.size === 0) caughtUp();
    const timer = this.o.once
      ? setTimeout(
          () => gaveUp(new Error(`reading ${TENANT_PAUSES_TOPIC} timed out after ${ONCE_TIMEOUT_MS} ms`)),
          ONCE_TIMEOUT_MS,
        )
      : undefined;
    void done.finally(() => clearTimeout(timer)).catch(() => undefined);
    this.groupId = `${this.o.groupPrefix ?? TENANT_PAUSES_GROUP_PREFIX}${randomUUID()}`;
    // Unwanted (closed, replaced), not restarted after a crash, and stopped if a restart rejoins: it'd hold the exit.
    const unwanted = () => this.closed || consumer !== this.consumer;
    const consumer: Consumer = this.kafka.consumer({
      groupId: this.groupId,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 500,
      retry: { retries: 5, restartOnFailure: async () => !unwanted() },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (unwanted()) return void consumer.disconnect().catch(() => undefined);
      for (const partition of payload.memberAssignment[TENANT_PAUSES_TOPIC] ?? []) {
        const offset = this.next.get(partition);
        if (offset !== undefined)
          consumer.seek({ topic: TENANT_PAUSES_TOPIC, partition, offset: String(offset) });
      }
    });
    // Every fetch, records handed over or not (markers, aborted records): its last offset is read past.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.firstOffset !== null) advanced(payload.partition, BigInt(payload.lastOffset) + 1n);
    });
    const began = Date.now();
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (unwanted()) return;
      // A command's read fails rather than wait on kafkajs's restarts for ever; only a group coordinator still
      // loading (a broker no group has used yet) is waited for, a bounded while.
      const loading = groupCoordinatorNotReady(payload.error) && Date.now() - began < COORDINATOR_WAIT_MS;
      if (this.o.once && !settled && !loading) return gaveUp(payload.error);
      if (payload.restart) return;
      // Before the pauses are read, whoever follows (start, lookAgain) starts over with backoff.
      if (!settled) return gaveUp(payload.error);
      // kafkajs gave up (an ACL revoked, the topic deleted): the pauses last read stay in force; start over.
      this.problem = kafkaProblem(payload.error, 'tenant pauses not followed');
      this.failed(payload.error, 'following the tenant pauses stopped; starting again');
      void this.stopConsumer().then(() => this.lookAgain());
    });
    await consumer.connect();
    if (this.closed) return this.stopConsumer();
    await consumer.subscribe({ topic: TENANT_PAUSES_TOPIC, fromBeginning: true });
    if (this.closed) return this.stopConsumer();
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        this.state.apply(message);
        advanced(partition, BigInt(message.offset) + 1n);
      },
    });
    await done;
    this.abandonRead = undefined;
    if (this.closed) return;
    this.problem = undefined;
    this.failures = 0;
    this.state.announce();
  }

  private failed(err: unknown, msg: string): void {
    this.failures++;
    if (logsRepeat(this.failures)) this.o.logger.warn({ err, failures: this.failures }, msg);
  }

  private async stopConsumer(): Promise<void> {
    const consumer = this.consumer;
    const groupId = this.groupId;
    this.consumer = undefined;
    this.groupId = undefined;
    if (!consumer) return;
    await consumer.disconnect().catch(() => undefined);
    // The group is this process's alone: nothing to keep (without Delete, Kafka drops the empty group itself).
    if (groupId) await this.admin.deleteGroups([groupId]).catch(() => undefined);
  }
}
