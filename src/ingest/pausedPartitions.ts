/**
 * The partitions an ingester holds paused, and why. A partition is paused when one of its records cannot be
 * started or dead-lettered (Temporal or Kafka unreachable) and resumed by that same record's success, so each
 * pause has exactly one owner that lifts it: a tenant's topic never stays paused because another tenant's
 * record failed (the single process-wide flag it replaces could leave one paused for good).
 */
import type { Gauge } from 'prom-client';

/** The consumer operations this needs; kafkajs's Consumer has them. */
export interface Pausable {
  pause(topics: { topic: string; partitions?: number[] }[]): void;
  resume(topics: { topic: string; partitions?: number[] }[]): void;
}

interface Pause {
  topic: string;
  partition: number;
  reason: string;
  sinceMs: number;
}

export class PausedPartitions {
  private readonly pauses = new Map<string, Pause>();

  constructor(private readonly gauge: Gauge<'topic'>) {}

  /** Pauses the partition unless it is already; true when this call paused it. */
  pause(consumer: Pausable, topic: string, partition: number, reason: string): boolean {
    const key = `${topic}/${partition}`;
    if (this.pauses.has(key)) return false;
    this.pauses.set(key, { topic, partition, reason, sinceMs: Date.now() });
    consumer.pause([{ topic, partitions: [partition] }]);
    this.count(topic);
    return true;
  }

  /** Resumes the partition if it is paused; true when this call resumed it. */
  resume(consumer: Pausable, topic: string, partition: number): boolean {
    if (!this.pauses.delete(`${topic}/${partition}`)) return false;
    consumer.resume([{ topic, partitions: [partition] }]);
    this.count(topic);
    return true;
  }

  /** The consumer is gone (restart, rebalance of a new consumer): kafkajs forgets its pauses with it. */
  clear(): void {
    const topics = new Set([...this.pauses.values()].map((p) => p.topic));
    this.pauses.clear();
    for (const topic of topics) this.count(topic);
  }

  get size(): number {
    return this.pauses.size;
  }

  /** One line for /readyz: how many are paused, and the oldest pause with its reason. */
  summary(nowMs = Date.now()): string | undefined {
    let oldest: Pause | undefined;
    for (const p of this.pauses.values()) if (!oldest || p.sinceMs < oldest.sinceMs) oldest = p;
    if (!oldest) return undefined;
    const secs = Math.round((nowMs - oldest.sinceMs) / 1000);
    return `paused: ${this.pauses.size} partition(s); oldest ${oldest.topic}/${oldest.partition} for ${secs}s: ${oldest.reason}`;
  }

  private count(topic: string): void {
    let n = 0;
    for (const p of this.pauses.values()) if (p.topic === topic) n++;
    this.gauge.set({ topic }, n);
  }
}
