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
      outage = { topic, partition, reason, sinceMs: Date.now(), failures: 0, timer: undefined };
      this.outages.set(key, outage);
    }
    outage.failures++;
    outage.reason = reason;
    if (outage.timer === undefined) {
      consumer.pause([{ topic, partitions: [partition] }]);
      const delayMs = Math.min(INITIAL_BACKOFF_MS * 2 ** (outage.failures - 1), MAX_BACKOFF_MS);
      const o = outage;
      o.timer = setTimeout(() => {
        o.timer = undefined;
        consumer.resume([{ topic, partitions: [partition] }]);
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
      consumer.resume([{ topic, partitions: [partition] }]);
    }
    this.count(topic);
    return true;
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

  /** True while the partition waits out an outage's backoff: its resume is the outage's to make. */
  holds(topic: string, partition: number): boolean {
    return this.outages.get(`${topic}/${partition}`)?.timer !== undefined;
  }

  /** Ends the partition's outage if its backoff already resumed it (no retry pending); true when one ended. */
  forgetResumed(topic: string, partition: number): boolean {
    const key = `${topic}/${partition}`;
    const outage = this.outages.get(key);
    if (!outage || outage.timer !== undefined) return false;
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
