/**
 * The ingester's gauges that need the broker rather than the records: inbox lag per dispatch partition (last
 * stable offset less the group's committed offset: docs/contract.md §2, "Committed offsets and lag") and, per
 * tenant served, the DLQ backlog not yet replayed with the age of its oldest record. Refreshed on timers of their
 * own; a failed round is retried at the next.
 */
import { tenantFromTopic, topics as topicNames } from '../contract';
import { dlqBacklog } from '../kafka/dlqBacklog';
import { groupPositions } from '../kafka/offsets';
import type { KafkaAdmin } from '../kafka/port';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';

export class IngestMonitor {
  private lagTimer: NodeJS.Timeout | undefined;
  private dlqTimer: NodeJS.Timeout | undefined;

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
    if (topics.length === 0) return;
    try {
      for (const p of await groupPositions(this.admin, this.groupId, topics)) {
        const base = p.committed ?? p.low;
        this.metrics.inboxLag.set(
          { topic: p.topic, partition: String(p.partition) },
          Number(p.high > base ? p.high - base : 0n),
        );
      }
    } catch (err) {
      this.logger.debug({ err }, 'lag refresh failed');
    }
  }

  /** DLQ backlog of each tenant served: records not yet handled by `dlq replay`, and the oldest's age. */
  async refreshDlqBacklog(): Promise<void> {
    for (const topic of this.subscribed()) {
      const tenant = tenantFromTopic(topic);
      if (tenant === undefined) continue;
      const dlqTopic = topicNames.dlq(tenant);
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
}
