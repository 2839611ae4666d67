/**
 * The ingester's gauges that need the broker rather than the records: inbox lag per dispatch partition (last
 * stable offset less the group's committed offset: docs/contract.md §2, "Committed offsets and lag") and, per
 * tenant served, the DLQ backlog not yet replayed with the age of its oldest record. Refreshed on timers of their
 * own; a failed round is retried at the next.
 */
import { tenantFromTopic, topics as topicNames } from '../contract';
import { errorChain } from '../errors';
import { dlqBacklog } from '../kafka/dlqBacklog';
import { groupPositions } from '../kafka/offsets';
import type { KafkaAdmin } from '../kafka/port';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';

export class IngestMonitor {
  private lagTimer: NodeJS.Timeout | undefined;
  private dlqTimer: NodeJS.Timeout | undefined;
  /** The series each gauge has now, so that those of a topic no longer measured are removed. */
  private lagSeries = new Map<string, { topic: string; partition: string }>();
  private dlqSeries = new Set<string>();

  constructor(
    private readonly admin: KafkaAdmin,
    private readonly groupId: string,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
    private readonly opts: { lagRefreshMs: number; dlqRefreshMs: number },
    private readonly subscribed: () => string[],
  ) {}

  start(): void {
    this.lagTimer = setInterval(() => void this.refreshLag(), this.opts.lagRefreshMs);
    let dlqRunning = false;
    this.dlqTimer = setInterval(() => {
      if (dlqRunning) return;
      dlqRunning = true;
      void this.refreshDlqBacklog().finally(() => (dlqRunning = false));
    }, this.opts.dlqRefreshMs);
  }

  stop(): void {
    if (this.lagTimer) clearInterval(this.lagTimer);
    if (this.dlqTimer) clearInterval(this.dlqTimer);
  }

  async refreshLag(): Promise<void> {
    const topics = this.subscribed();
    try {
      const reported = new Map<string, { topic: string; partition: string }>();
      for (const p of topics.length === 0 ? [] : await groupPositions(this.admin, this.groupId, topics)) {
        const base = p.committed ?? p.low;
        const labels = { topic: p.topic, partition: String(p.partition) };
        this.metrics.inboxLag.set(labels, Number(p.high > base ? p.high - base : 0n));
        reported.set(`${p.topic}/${p.partition}`, labels);
      }
      for (const [key, labels] of this.lagSeries)
        if (!reported.has(key)) this.metrics.inboxLag.remove(labels);
      this.lagSeries = reported;
    } catch (err) {
      this.logger.debug({ err }, 'lag refresh failed');
    }
  }

  /**
   * DLQ backlog of each tenant served: records not yet handled by `dlq replay`, and the oldest's age. A tenant no
   * longer served, or whose DLQ topic is gone, has no series: a last value nobody measures any more would keep its
   * alert firing.
   */
  async refreshDlqBacklog(): Promise<void> {
    const measured = new Set<string>();
    for (const topic of this.subscribed()) {
      const tenant = tenantFromTopic(topic);
      if (tenant === undefined) continue;
      const dlqTopic = topicNames.dlq(tenant);
      try {
        const { lag, oldestAgeSeconds } = await dlqBacklog(this.admin, dlqTopic, Date.now());
        this.metrics.dlqConsumerLag.set({ topic: dlqTopic }, lag);
        this.metrics.dlqOldestAge.set({ topic: dlqTopic }, oldestAgeSeconds);
        measured.add(dlqTopic);
      } catch (err) {
        // A tenant without a DLQ topic (not made yet, or deleted) has no backlog; anything else keeps the last
        // value and is retried next round.
        if (!topicMissing(err)) measured.add(dlqTopic);
        this.logger.debug({ err, topic: dlqTopic }, 'DLQ backlog refresh failed');
      }
    }
    for (const dlqTopic of this.dlqSeries) {
      if (measured.has(dlqTopic)) continue;
      this.metrics.dlqConsumerLag.remove({ topic: dlqTopic });
      this.metrics.dlqOldestAge.remove({ topic: dlqTopic });
    }
    this.dlqSeries = measured;
  }
}

function topicMissing(err: unknown): boolean {
  return errorChain(err).some((e) => e['type'] === 'UNKNOWN_TOPIC_OR_PARTITION');
}
