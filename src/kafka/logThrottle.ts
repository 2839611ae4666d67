/**
 * kafkajs logs each retry of a broker outage, at ERROR, two lines per dial (the connection's error and the broker
 * pool's "trying another broker"), and a consumer's crash and restart on top: a few minutes of outage flood
 * stderr. The relay reports an outage in its own words (readiness, the ingester's and DLQ publisher's warnings),
 * so kafkajs's lines are context: the same message is shown once per window, and the next one shown says how many
 * were left out.
 */
export class RepeatThrottle {
  private readonly seen = new Map<string, { shownAt: number; repeated: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    /** Distinct messages remembered; beyond it the stale ones are forgotten (an unbounded set of brokers or ids). */
    private readonly maxKeys = 1000,
  ) {}

  /** Undefined when this message is to be dropped; else how many like it were dropped since the last one shown. */
  admit(key: string): number | undefined {
    const now = this.now();
    const entry = this.seen.get(key);
    if (entry && now - entry.shownAt < this.windowMs) {
      entry.repeated++;
      return undefined;
    }
    if (!entry && this.seen.size >= this.maxKeys) this.forgetStale(now);
    this.seen.set(key, { shownAt: now, repeated: 0 });
    return entry?.repeated ?? 0;
  }

  private forgetStale(now: number): void {
    for (const [key, e] of this.seen) if (now - e.shownAt >= this.windowMs) this.seen.delete(key);
    // All recent: forget the oldest rather than grow (one more line shown, never one lost for good).
    if (this.seen.size >= this.maxKeys) this.seen.delete(this.seen.keys().next().value!);
  }
}

/** Messages that differ only in numbers (ports, retry counts, delays in ms) are the same message. */
export function repeatKey(namespace: string, message: string): string {
  return `${namespace}|${message.replace(/\d+/g, '#')}`;
}
