/**
 * Publishes dead-letter records (SPEC §6). One pooled, idempotent producer per process (acks=-1), shared by
 * every caller. The DLQ topic is declared on first use when missing, with the SPEC's 14-day retention, so a
 * tenant whose topics were created by hand still gets its dead letters; `topics apply` is the normal path.
 */
import { type Admin, type Kafka, KafkaJSProtocolError, type Producer } from 'kafkajs';
import { type DlqRecord, withoutPayload } from '../contract';
import type { Logger } from '../logger';
import type { RelayMetrics } from '../metrics';
import { DLQ_TOPIC_CONFIG, ensureTopics } from './topics';

export class DlqPublisher {
  private producer: Producer | undefined;
  private admin: Admin | undefined;
  private connecting: Promise<void> | undefined;
  private readonly knownTopics = new Set<string>();
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
  ) {}

  private connect(): Promise<void> {
    this.connecting ??= (async () => {
      const producer = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
      });
      const admin = this.kafka.admin();
      try {
        await producer.connect();
        await admin.connect();
      } catch (err) {
        this.connecting = undefined;
        await producer.disconnect().catch(() => undefined);
        await admin.disconnect().catch(() => undefined);
        throw err;
      }
      this.producer = producer;
      this.admin = admin;
    })();
    return this.connecting;
  }

  async publish(record: DlqRecord, key: string | Buffer | null): Promise<void> {
    if (this.closed) throw new Error('DLQ publisher is closed');
    await this.connect();
    if (!this.knownTopics.has(record.topic)) {
      const created = await ensureTopics(this.admin!, [
        { topic: record.topic, configEntries: DLQ_TOPIC_CONFIG },
      ]);
      if (created.length > 0) this.logger.warn({ topic: record.topic }, 'declared missing DLQ topic');
      this.knownTopics.add(record.topic);
    }
    const send = (value: string) =>
      this.producer!.send({
        topic: record.topic,
        acks: -1,
        messages: [{ key, value, headers: { 'dlq-type': record.type } }],
      });
    const value = JSON.stringify(record);
    try {
      await send(value);
    } catch (err) {
      // The broker refuses this record for its size, every time: retrying would stall the caller for good.
      if (!(err instanceof KafkaJSProtocolError && err.type === 'MESSAGE_TOO_LARGE')) throw err;
      const bytes = Buffer.byteLength(value);
      this.logger.warn(
        { topic: record.topic, dispatch_key: record.dispatch_key, bytes },
        'dead letter too large for its topic; publishing it without the payload',
      );
      await send(JSON.stringify(withoutPayload(record, bytes)));
    }
    this.metrics.dlqSent.inc({ topic: record.topic });
    this.logger.info(
      { topic: record.topic, type: record.type, dispatch_key: record.dispatch_key, error: record.error },
      'dead-lettered',
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connecting?.catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }
}
