/**
 * The ingester's gauges that need the broker rather than the records: inbox lag per dispatch partition (last
 * stable offset less the group's committed offset: docs/contract.md §2, "Committed offsets and lag") and, per
 * tenant served, the DLQ backlog not yet replayed with the age of its oldest record. Refreshed on timers of their
 * own; a failed round is retried at the next. A topic no longer measured (its tenant no longer consumed, its DLQ
 * topic gone) has no series: a last value nobody measures any more would keep its alert firing.
 *
 * On an admin client of its own, made anew when a topic it knew was deleted (kafka/renewingClient.ts): one tenant
 * offboarded must not stop every tenant's gauges.
 */
import { tenantFromTopic, topics as topicNames } from '../contract';
import { dlqBacklog } from '../kafka/dlqBacklog';
import { groupPositions } from '../kafka/offsets';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import { RenewingClient } from '../kafka/renewingClient';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';

export class IngestMonitor {
  private readonly admin: RenewingClient<KafkaAdmin>;
  private lagTimer: NodeJS.Timeout | undefined;
  private dlqTimer: NodeJS.Timeout | undefined;
  /** The round of each timer under way: one at a time, and close() waits for them. */
  private lagRound: Promise<void> | undefined;
  private dlqRound: Promise<void> | undefined;
  /** The series each gauge has now, so that those of a topic no longer measured are removed. */
  private lagSeries = new Map<string, { topic: string; partition: string }>();
  private dlqSeries = new Set<string>();

  constructor(
    kafka: KafkaClient,
    private readonly groupId: string,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
    private readonly opts: { lagRefreshMs: number; dlqRefreshMs: number },
    private readonly subscribed: () => string[],
  ) {
    this.admin = new RenewingClient(() => kafka.admin());
  }

  start(): void {
    this.lagTimer = setInterval(() => {
      this.lagRound ??= this.refreshLag().finally(() => (this.lagRound = undefined));
    }, this.opts.lagRefreshMs);
    this.dlqTimer = setInterval(() => {
      this.dlqRound ??= this.refreshDlqBacklog().finally(() => (this.dlqRound = undefined));
    }, this.opts.dlqRefreshMs);
  }

  stop(): void {
    if (this.lagTimer) clearInterval(this.lagTimer);
    if (this.dlqTimer) clearInterval(this.dlqTimer);
  }

  /** Stops the timers, lets a round under way end, measures the lag a last time, and disconnects. */
  async close(): Promise<void> {
    this.stop();
    await Promise.all([this.lagRound, this.dlqRound]);
    await this.refreshLag();
    await this.admin.close();
  }

  async refreshLag(): Promise<void> {
    const topics = this.subscribed();
    try {
      const positions =
        topics.length === 0 ? [] : await this.admin.use((a) => groupPositions(a, this.groupId, topics));
      const reported = new Map<string, { topic: string; partition: string }>();
      for (const p of positions) {
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
   * DLQ backlog of each tenant served: records not yet handled by `dlq replay`, and the oldest's age. Which DLQ
   * topics exist comes from one listing per round: a tenant without one (not made yet, or deleted) has no backlog,
   * and is not asked about (kafkajs would retry that question for seconds).
   */
  async refreshDlqBacklog(): Promise<void> {
    let existing: Set<string>;
    try {
      existing = new Set(await this.admin.use((a) => a.listTopics()));
    } catch (err) {
      this.logger.debug({ err }, 'DLQ backlog refresh failed');
      return;
    }
    const measured = new Set<string>();
    for (const topic of this.subscribed()) {
      const tenant = tenantFromTopic(topic);
      if (tenant === undefined) continue;
      const dlqTopic = topicNames.dlq(tenant);
      if (!existing.has(dlqTopic)) continue;
      // Kept on failure: the last value stays until the next round (or a listing without the topic) says more.
      measured.add(dlqTopic);
      try {
        const { lag, oldestAgeSeconds } = await this.admin.use((a) => dlqBacklog(a, dlqTopic, Date.now()));
        this.metrics.dlqConsumerLag.set({ topic: dlqTopic }, lag);
        this.metrics.dlqOldestAge.set({ topic: dlqTopic }, oldestAgeSeconds);
      } catch (err) {
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
