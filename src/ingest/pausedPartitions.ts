/**
 * Partitions in an outage: a record of theirs could not be started or dead-lettered (Temporal or Kafka
 * unreachable, a DLQ write refused). Such a partition is paused at once and its batch handler returns, leaving
 * the record unresolved; after a backoff the partition is resumed, kafkajs fetches it again from that record, and
 * the record's success ends the outage. Two properties follow, both kept by tests:
 * - no partition's outage holds another's records: kafkajs fetches a broker's partitions together and waits for
 *   every batch of a fetch before the next one, so a handler retrying in place would stall every tenant on that
 *   broker;
 * - each pause has one owner that lifts it (its timer), so no topic stays paused because another failed (the
 *   process-wide flag this replaces left some paused for good after a short Temporal outage).
 * Outages outlive neither the consumer's crash nor the partition's assignment: between a kafkajs crash and its
 * restart pause and resume throw (the restarted consumer has forgotten every pause and fetches the record again,
 * whose next failure pauses it anew), and a partition the group moved to another member is that member's to try.
 */
import type { Gauge } from 'prom-client';

/** The consumer operations this needs; kafkajs's Consumer has them. */
export interface Pausable {
  pause(topics: { topic: string; partitions?: number[] }[]): void;
  resume(topics: { topic: string; partitions?: number[] }[]): void;
}

interface Outage {
  topic: string;
  partition: number;
  reason: string;
  sinceMs: number;
  failures: number;
  /** Pending resume; undefined once resumed for the next try. */
  timer: NodeJS.Timeout | undefined;
  /** A record of the partition is being tried again since the resume: its outcome ends or renews the outage. */
  retrying: boolean;
}

const INITIAL_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 10_000;

export class PausedPartitions {
  private readonly outages = new Map<string, Outage>();

  constructor(private readonly gauge: Gauge<'topic'>) {}

  /**
   * Records a failure: pauses the partition (unless a resume is already pending) and schedules its resume after
   * a backoff that doubles with each failure. Returns how many failures in a row the partition has had.
   */
  failed(consumer: Pausable, topic: string, partition: number, reason: string): number {
    const key = `${topic}/${partition}`;
    let outage = this.outages.get(key);
    if (!outage) {
      outage = {
        topic,
        partition,
        reason,
        sinceMs: Date.now(),
        failures: 0,
        timer: undefined,
        retrying: false,
      };
      this.outages.set(key, outage);
    }
    outage.failures++;
    outage.reason = reason;
    outage.retrying = false;
    if (outage.timer === undefined) {
      consumer.pause([{ topic, partitions: [partition] }]);
      const delayMs = Math.min(INITIAL_BACKOFF_MS * 2 ** (outage.failures - 1), MAX_BACKOFF_MS);
      const o = outage;
      o.timer = setTimeout(() => {
        o.timer = undefined;
        resumeQuietly(consumer, topic, partition);
      }, delayMs);
    }
    this.count(topic);
    return outage.failures;
  }

  /** A record of the partition succeeded: its outage, if any, is over. True when one was. */
  succeeded(consumer: Pausable, topic: string, partition: number): boolean {
    const key = `${topic}/${partition}`;
    const outage = this.outages.get(key);
    if (!outage) return false;
    this.outages.delete(key);
    if (outage.timer !== undefined) {
      clearTimeout(outage.timer);
      resumeQuietly(consumer, topic, partition);
    }
    this.count(topic);
    return true;
  }

  /**
   * The group assigned this member `assignment`: outages of partitions it no longer owns end here, their pauses
   * lifted (kafkajs keeps a pause across assignments, and one left behind would hold the partition if it came
   * back). Without this, a rebalance during an outage kept the process unready for good.
   */
  retainAssigned(consumer: Pausable, assignment: Record<string, number[]>): void {
    const topics = new Set<string>();
    for (const [key, o] of this.outages) {
      if (assignment[o.topic]?.includes(o.partition)) continue;
      if (o.timer !== undefined) clearTimeout(o.timer);
      this.outages.delete(key);
      resumeQuietly(consumer, o.topic, o.partition);
      topics.add(o.topic);
    }
    for (const topic of topics) this.count(topic);
  }

  /** The consumer is gone (restart, topic change): kafkajs forgets its pauses with it. */
  clear(): void {
    const topics = new Set<string>();
    for (const o of this.outages.values()) {
      if (o.timer !== undefined) clearTimeout(o.timer);
      topics.add(o.topic);
    }
    this.outages.clear();
    for (const topic of topics) this.count(topic);
  }

  /**
   * kafkajs restarted the consumer after a crash: the new one has forgotten every pause and fetches these
   * partitions at once. The outages stay (the process stays unready), their timers go, so the next failure pauses
   * the partition again with the next backoff instead of being retried at fetch speed until the old timer fires.
   */
  consumerRestarted(): void {
    for (const o of this.outages.values()) {
      if (o.timer !== undefined) clearTimeout(o.timer);
      o.timer = undefined;
    }
  }

  /** True while the partition waits out an outage's backoff: its resume is the outage's to make. */
  holds(topic: string, partition: number): boolean {
    return this.outages.get(`${topic}/${partition}`)?.timer !== undefined;
  }

  /** A record of the partition is being tried (again, if it is in an outage the backoff resumed). */
  trying(topic: string, partition: number): void {
    const outage = this.outages.get(`${topic}/${partition}`);
    if (outage && outage.timer === undefined) outage.retrying = true;
  }

  /**
   * Ends the partition's outage if its backoff already resumed it and no record of it is being tried again (that
   * record's outcome is the outage's to end or renew); true when one ended.
   */
  forgetResumed(topic: string, partition: number): boolean {
    const key = `${topic}/${partition}`;
    const outage = this.outages.get(key);
    if (!outage || outage.timer !== undefined || outage.retrying) return false;
    this.outages.delete(key);
    this.count(topic);
    return true;
  }

  get size(): number {
    return this.outages.size;
  }

  /** One line for /readyz: how many partitions are in an outage, and the oldest with its last reason. */
  summary(nowMs = Date.now()): string | undefined {
    let oldest: Outage | undefined;
    for (const o of this.outages.values()) if (!oldest || o.sinceMs < oldest.sinceMs) oldest = o;
    if (!oldest) return undefined;
    const secs = Math.round((nowMs - oldest.sinceMs) / 1000);
    return `paused: ${this.outages.size} partition(s); oldest ${oldest.topic}/${oldest.partition} for ${secs}s: ${oldest.reason}`;
  }

  private count(topic: string): void {
    let n = 0;
    for (const o of this.outages.values()) if (o.topic === topic) n++;
    this.gauge.set({ topic }, n);
  }
}

/**
 * Resumes a partition; a consumer between a crash and its restart throws instead, and has forgotten the pause
 * anyway. Never throws: this runs from timers, where a throw ends the process.
 */
function resumeQuietly(consumer: Pausable, topic: string, partition: number): void {
  try {
    consumer.resume([{ topic, partitions: [partition] }]);
  } catch {
    // Nothing to lift: the restarted consumer fetches the partition from its committed offset.
  }
}
