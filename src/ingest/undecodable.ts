/**
 * Partitions held at a record batch the ingester cannot decode (a corrupt compressed body). kafkajs decodes a
 * broker's whole fetch response at once, so one such batch fails the fetch of every partition on that broker —
 * every tenant's. The crash's error names the partitions and offsets of the batches that fail
 * (kafka/fetchAttribution.ts decodes the failed response again partition by partition); the ingester holds
 * those paused and consumes the others again after one rejoin. Only for a fetch it could not walk (a legacy
 * message format) does it probe the partitions (kafka/decodeProbe.ts reads each one alone).
 *
 * A held partition loses nothing: its committed offset stays before the batch, the gauge
 * `poimen_ingest_undecodable_partitions` is 1, and one error line names topic, partition, offset and codec. An
 * operator decides (docs/operations.md): fix the producer and move the group past the batch with
 * `kafka-consumer-groups --reset-offsets`, then restart the ingesters (the hold lives in each process).
 */
import type { LocatedBatch } from '../kafka/codecs';
import { groupPositions } from '../kafka/offsets';
import type { KafkaClient } from '../kafka/port';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import { type ProbeTarget, type UndecodableBatch, findUndecodableBatches } from '../kafka/decodeProbe';

export class UndecodablePartitions {
  private readonly held = new Map<string, UndecodableBatch>();

  constructor(
    private readonly kafka: KafkaClient,
    private readonly groupId: string,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
  ) {}

  /**
   * Holds the partitions of the batches a failed fetch named (kafka/fetchAttribution.ts), or, when it named
   * none (a legacy message format), probes the topics' partitions not already held from the group's position.
   * Returns how many partitions it newly holds.
   */
  async find(topics: string[], located?: LocatedBatch[]): Promise<number> {
    if (located && located.length > 0) return this.hold(located);
    const targets: ProbeTarget[] = [];
    for (const p of await this.positions(topics)) {
      if (this.held.has(`${p.topic}/${p.partition}`)) continue;
      targets.push({ topic: p.topic, partition: p.partition, offset: String(p.committed ?? p.low) });
    }
    return this.hold(await findUndecodableBatches(this.kafka, targets));
  }

  /**
   * The group's positions, on an admin client made for this probe alone: it is rare, and a long-lived client that
   * asked about a topic deleted since fails every later call (kafka/renewingClient.ts).
   */
  private async positions(topics: string[]) {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      return await groupPositions(admin, this.groupId, topics);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  private hold(batches: UndecodableBatch[]): number {
    let added = 0;
    for (const u of batches) {
      const key = `${u.topic}/${u.partition}`;
      if (this.held.has(key)) continue;
      added++;
      this.held.set(key, u);
      this.metrics.undecodablePartitions.set({ topic: u.topic, partition: String(u.partition) }, 1);
      this.logger.error(
        { topic: u.topic, partition: u.partition, offset: u.offset, codec: u.codec, reason: u.reason },
        `${u.topic}[${u.partition}] held at offset ${u.offset}: could not decode a ${u.codec}-compressed record batch (${u.reason}); this partition waits, the others go on`,
      );
    }
    return added;
  }

  /** The held partitions among an assignment, as kafkajs's pause() takes them. */
  among(assignment: Record<string, number[]>): { topic: string; partitions: number[] }[] {
    return Object.entries(assignment)
      .map(([topic, partitions]) => ({
        topic,
        partitions: partitions.filter((p) => this.held.has(`${topic}/${p}`)),
      }))
      .filter((t) => t.partitions.length > 0);
  }
}
