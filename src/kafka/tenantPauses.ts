/**
 * The pause topic (contract §2, "Pausing a tenant"): `tenant pause` and `resume` write a tenant's pause to it
 * (writeTenantPause), `tenant status` reads it to its end (readTenantPauses), and every ingester follows it
 * (TenantPauseFollower): at start it reads every pause before it consumes a record, then it learns a new one within
 * about a second. The topic is compacted and keyed by tenant, so it holds each tenant's latest pause for good, and a
 * pause outlives every process. Owned here because only src/kafka/ speaks kafkajs; what a pause does is the
 * ingester's (ingest/admission.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, ITopicConfig, Kafka, KafkaMessage } from 'kafkajs';
import type { Gauge } from 'prom-client';
import { TENANT_PAUSES_GROUP_PREFIX, TENANT_PAUSES_TOPIC } from '../contract/names';
import { type TenantPause, decodeTenantPause, encodeTenantPause } from '../contract/tenantPause';
import { type Logger, logsRepeat } from '../logger';
import { readRange, watermarks } from './readRange';
import { ensureTopics } from './topics';

/** One partition: every pause of a tenant in one ordered log. Compacted: a tenant's latest pause is kept. */
export const TENANT_PAUSES_TOPIC_SPEC: ITopicConfig = {
  topic: TENANT_PAUSES_TOPIC,
  numPartitions: 1,
  configEntries: [{ name: 'cleanup.policy', value: 'compact' }],
};

/** Writes the tenant's pause (declaring the topic first if it is missing), acknowledged by every in-sync replica. */
export async function writeTenantPause(kafka: Kafka, admin: Admin, pause: TenantPause): Promise<void> {
  await ensureTopics(admin, [TENANT_PAUSES_TOPIC_SPEC]);
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  try {
    await producer.send({
      topic: TENANT_PAUSES_TOPIC,
      acks: -1,
      messages: [{ key: pause.tenant, value: encodeTenantPause(pause) }],
    });
  } finally {
    await producer.disconnect();
  }
}

/** Every tenant's latest pause, read to the topic's end as it is now; none when the topic does not exist yet. */
export async function readTenantPauses(kafka: Kafka, admin: Admin): Promise<Map<string, TenantPause>> {
  const state = new Map<string, TenantPause>();
  if (!(await admin.listTopics()).includes(TENANT_PAUSES_TOPIC)) return state;
  const marks = await watermarks(admin, TENANT_PAUSES_TOPIC);
  await readRange(kafka, admin, {
    topic: TENANT_PAUSES_TOPIC,
    groupId: `${TENANT_PAUSES_GROUP_PREFIX}read-${randomUUID()}`,
    ranges: [...marks].map(([partition, { low, high }]) => ({ partition, start: low, end: high })),
    commit: false,
    onMessage: async (_partition, message) => {
      const pause = pauseOf(message);
      if (typeof pause !== 'string') state.set(pause.tenant, pause);
    },
  });
  return state;
}

function pauseOf(message: KafkaMessage): TenantPause | string {
  return decodeTenantPause(message.key?.toString('utf8') ?? null, message.value?.toString('utf8') ?? null);
}

export interface TenantPauseFollowerOptions {
  logger: Logger;
  /** Set to 1 while a tenant is paused, 0 once resumed. */
  gauge?: Gauge<'tenant'>;
  /** Called after each pause read (a tenant paused, resumed, or its reason changed). */
  onChange?: (pause: TenantPause) => void;
  /** How often a missing topic is looked for again (it appears with the first `tenant pause`). */
  recheckMs?: number;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 10_000;

/**
 * Follows the pause topic for one process, through a throwaway consumer group of its own (every process reads every
 * pause), deleted at close. Until `start` has resolved the process knows no pause and must consume nothing.
 */
export class TenantPauseFollower {
  private readonly state = new Map<string, TenantPause>();
  /** Per partition, the next offset to read: where a rejoin (a restart after a crash) seeks, so nothing is read twice. */
  private readonly next = new Map<number, string>();
  private readonly admin: Admin;
  private consumer: Consumer | undefined;
  private groupId: string | undefined;
  private recheck: NodeJS.Timeout | undefined;
  private closed = false;
  private failures = 0;
  /** Why the pauses are not known yet (readiness detail); undefined once they are. */
  private problem: string | undefined = 'reading tenant pauses';

  constructor(
    private readonly kafka: Kafka,
    private readonly o: TenantPauseFollowerOptions,
  ) {
    this.admin = kafka.admin();
  }

  /** The tenant's latest pause, if it is paused now. */
  pauseOf(tenant: string): TenantPause | undefined {
    const p = this.state.get(tenant);
    return p?.paused ? p : undefined;
  }

  isPaused(tenant: string): boolean {
    return this.state.get(tenant)?.paused === true;
  }

  /** Why the pauses are not known yet; undefined once every pause written before `start` was read. */
  get notYetRead(): string | undefined {
    return this.problem;
  }

  /**
   * Resolves once every pause written before it was called has been read, or at once when the topic does not exist
   * yet (then it is looked for every `recheckMs`). Kafka unreachable: asks again with backoff, never rejects; a
   * close() meanwhile ends it.
   */
  async start(): Promise<void> {
    for (let delayMs = RETRY_MIN_MS; !this.closed; delayMs = Math.min(delayMs * 2, RETRY_MAX_MS)) {
      try {
        await this.admin.connect();
        if (!(await this.admin.listTopics()).includes(TENANT_PAUSES_TOPIC)) {
          this.problem = undefined;
          this.lookAgain();
          return;
        }
        await this.follow();
        return;
      } catch (err) {
        if (this.closed) return;
        this.problem = `reading tenant pauses: ${err instanceof Error ? err.message : String(err)}`;
        this.failed(err, 'cannot read the tenant pauses yet; retrying');
        await this.stopConsumer();
        await new Promise((r) => setTimeout(r, delayMs).unref());
      }
    }
  }

  /** close() was called: whoever waited for `start` stops too. */
  get stopped(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.recheck) clearInterval(this.recheck);
    this.recheck = undefined;
    await this.stopConsumer();
    await this.admin.disconnect().catch(() => undefined);
  }

  /** A missing topic is looked for again until it appears, and then followed. */
  private lookAgain(): void {
    if (this.recheck || this.closed) return;
    this.recheck = setInterval(() => {
      void this.admin
        .listTopics()
        .then(async (topics) => {
          if (!topics.includes(TENANT_PAUSES_TOPIC) || !this.recheck || this.closed) return;
          clearInterval(this.recheck);
          this.recheck = undefined;
          await this.follow();
        })
        .catch((err: unknown) => {
          // Following failed half-way: look again from the start at the next round.
          void this.stopConsumer();
          this.lookAgain();
          this.failed(err, 'cannot look for the tenant pause topic; looking again');
        });
    }, this.o.recheckMs ?? 5000);
    this.recheck.unref();
  }

  /** Joins a group of its own, reads from the start, and resolves once the log's end as of now has been read. */
  private async follow(): Promise<void> {
    const ends = new Map(
      [...(await watermarks(this.admin, TENANT_PAUSES_TOPIC))].map(([p, { high }]) => [p, high]),
    );
    for (const [p, end] of ends) if (BigInt(this.next.get(p) ?? '0') >= end) ends.delete(p);
    let settled = false;
    let caughtUp!: () => void;
    let gaveUp!: (err: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      caughtUp = () => ((settled = true), resolve());
      gaveUp = (err) => ((settled = true), reject(err));
    });
    if (ends.size === 0) caughtUp();
    this.groupId = `${TENANT_PAUSES_GROUP_PREFIX}${randomUUID()}`;
    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 500,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      for (const partition of payload.memberAssignment[TENANT_PAUSES_TOPIC] ?? []) {
        const offset = this.next.get(partition);
        if (offset !== undefined) consumer.seek({ topic: TENANT_PAUSES_TOPIC, partition, offset });
      }
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || this.closed || consumer !== this.consumer) return;
      // Before the pauses are read, whoever follows (start, lookAgain) starts over with backoff.
      if (!settled) return gaveUp(payload.error);
      // kafkajs gave up (an ACL revoked, the topic deleted): the last pauses read stay in force; start over.
      this.failed(payload.error, 'following the tenant pauses stopped; starting again');
      void this.stopConsumer().then(() => this.lookAgain());
    });
    await consumer.connect();
    await consumer.subscribe({ topic: TENANT_PAUSES_TOPIC, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        this.apply(message);
        this.next.set(partition, (BigInt(message.offset) + 1n).toString());
        const end = ends.get(partition);
        if (end !== undefined && BigInt(message.offset) + 1n >= end) {
          ends.delete(partition);
          if (ends.size === 0) caughtUp();
        }
      },
    });
    await done;
    this.problem = undefined;
    this.failures = 0;
  }

  private apply(message: KafkaMessage): void {
    const pause = pauseOf(message);
    if (typeof pause === 'string') {
      this.o.logger.warn(
        { offset: message.offset, problem: pause },
        'skipping a record of the tenant pause topic',
      );
      return;
    }
    const before = this.state.get(pause.tenant);
    this.state.set(pause.tenant, pause);
    this.o.gauge?.set({ tenant: pause.tenant }, pause.paused ? 1 : 0);
    if (pause.paused !== (before?.paused ?? false)) {
      this.o.logger.info(
        { tenant: pause.tenant, reason: pause.reason, by: pause.by, at: pause.at },
        pause.paused ? 'tenant paused: its records wait in Kafka' : 'tenant resumed',
      );
    }
    this.o.onChange?.(pause);
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
    // The group is this process's alone: nothing to keep (without Delete it expires with Kafka's offset retention).
    if (groupId) await this.admin.deleteGroups([groupId]).catch(() => undefined);
  }
}
