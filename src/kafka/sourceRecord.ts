/**
 * Reads back the source record of a dispatch (topic, partition, offset) so its dead letter carries the record as
 * it was consumed — value, key and headers (contract §6) — without the workflow input carrying a second copy of it.
 * Used only on the dead-letter path. The record may be gone (retention, a topic made anew): then undefined, and
 * the caller says so in the dead letter. Reads are few at a time: each joins a throwaway consumer group.
 */
import crypto from 'node:crypto';
import type { Admin, IHeaders, Kafka } from 'kafkajs';
import { readRange, watermarks } from './readRange';
import { RenewingClient } from './renewingClient';

export interface SourceRecord {
  value: Buffer | null;
  key: Buffer | null;
  headers: IHeaders;
}

export interface SourceCoordinates {
  topic: string;
  partition: number;
  offset: string;
}

const MAX_CONCURRENT_READS = 4;

export class SourceRecordReader {
  /** Made anew when a topic it knew was deleted (./renewingClient.ts). */
  private readonly admin: RenewingClient<Admin>;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly timeoutMs: number,
  ) {
    this.admin = new RenewingClient(() => kafka.admin());
  }

  async read(at: SourceCoordinates): Promise<SourceRecord | undefined> {
    if (this.closed) throw new Error('source record reader is closed');
    if (this.active >= MAX_CONCURRENT_READS) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await this.admin.use(async (admin) => {
        const offset = BigInt(at.offset);
        const marks = (await watermarks(admin, at.topic)).get(at.partition);
        if (!marks || offset < marks.low || offset >= marks.high) return undefined;
        let found: SourceRecord | undefined;
        await readRange(this.kafka, admin, {
          topic: at.topic,
          groupId: `poimen-relay-source-read-${crypto.randomUUID()}`,
          ranges: [{ partition: at.partition, start: offset, end: offset + 1n }],
          commit: false,
          timeoutMs: this.timeoutMs,
          onMessage: async (_partition, message) => {
            if (BigInt(message.offset) !== offset) return;
            found = { value: message.value, key: message.key, headers: message.headers ?? {} };
          },
        });
        return found;
      });
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.admin.close();
  }
}
