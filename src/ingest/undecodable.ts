/**
 * Partitions held at a record batch the ingester cannot decode (a corrupt compressed body). kafkajs decodes a
 * broker's whole fetch response at once, so one such batch fails the fetch of every partition on that broker —
 * every tenant's — and its crash does not name the partition. After such a crash the ingester finds the
 * partitions (kafka/decodeProbe.ts reads each one alone), holds them paused, and consumes the others again.
 *
 * A held partition loses nothing: its committed offset stays before the batch, the gauge
 * `poimen_ingest_undecodable_partitions` is 1, and one error line names topic, partition, offset and codec. An
 * operator decides (docs/operations.md): fix the producer and move the group past the batch with
 * `kafka-consumer-groups --reset-offsets`, then restart the ingesters (the hold lives in each process).
 */
import { groupPositions } from '../kafka/offsets';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import { type ProbeTarget, type UndecodableBatch, findUndecodableBatches } from '../kafka/decodeProbe';

export class UndecodablePartitions {
  private readonly held = new Map<string, UndecodableBatch>();

  constructor(
    private readonly kafka: KafkaClient,
    private readonly admin: KafkaAdmin,
    private readonly groupId: string,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
  ) {}

  /** Probes the topics' partitions (not already held) from the group's position; returns how many it newly holds. */
  async find(topics: string[]): Promise<number> {
    const targets: ProbeTarget[] = [];
    for (const p of await groupPositions(this.admin, this.groupId, topics)) {
      if (this.held.has(`${p.topic}/${p.partition}`)) continue;
      targets.push({ topic: p.topic, partition: p.partition, offset: String(p.committed ?? p.low) });
    }
    const found = await findUndecodableBatches(this.kafka, targets);
    for (const u of found) {
      this.held.set(`${u.topic}/${u.partition}`, u);
      this.metrics.undecodablePartitions.set({ topic: u.topic, partition: String(u.partition) }, 1);
      this.logger.error(
        { topic: u.topic, partition: u.partition, offset: u.offset, codec: u.codec, reason: u.reason },
        `${u.topic}[${u.partition}] held at offset ${u.offset}: could not decode a ${u.codec}-compressed record batch (${u.reason}); this partition waits, the others go on`,
      );
    }
    return found.length;
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
