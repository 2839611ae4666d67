/**
 * Reads back the source record of a dispatch (topic, partition, offset) so its dead letter carries the record as
 * it was consumed — value, key and headers (contract §6) — without the workflow input carrying a second copy of it.
 * Used only on the dead-letter path. The record may be gone (retention, a topic made anew): then undefined, and
 * the caller says so in the dead letter. Reads are few at a time: each joins a throwaway consumer group, whose first
 * join alone waits the broker's `group.initial.rebalance.delay.ms` (3 s by default). A read whose caller has given up
 * (its signal aborted) leaves the queue at once, or, running, stops at its next step (a group join under way is
 * waited out): a burst of dead letters does not make later reads wait behind reads nobody waits for.
 */
import crypto from 'node:crypto';
import type { Admin, IHeaders, Kafka } from 'kafkajs';
import { untilAborted } from '../poll';
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

  /**
   * The record at `at`, or undefined when Kafka no longer holds it. Rejects at once when `signal` aborts: a read
   * still waiting for its turn leaves the queue, a running one stops at its next step and holds its turn until then.
   */
  async read(at: SourceCoordinates, signal: AbortSignal): Promise<SourceRecord | undefined> {
    if (this.closed) throw new Error('source record reader is closed');
    await this.turn(signal);
    // Given up between its turn and now: the turn goes on to the next in line.
    if (signal.aborted) {
      this.release();
      throw signal.reason;
    }
    const work = this.admin
      .use(async (admin) => {
        const offset = BigInt(at.offset);
        const marks = (await watermarks(admin, at.topic)).get(at.partition);
        if (!marks || offset < marks.low || offset >= marks.high) return undefined;
        signal.throwIfAborted();
        let found: SourceRecord | undefined;
        await readRange(this.kafka, admin, {
          topic: at.topic,
          groupId: `poimen-relay-source-read-${crypto.randomUUID()}`,
          ranges: [{ partition: at.partition, start: offset, end: offset + 1n }],
          commit: false,
          timeoutMs: this.timeoutMs,
          signal,
          onMessage: async (_partition, message) => {
            if (BigInt(message.offset) !== offset) return;
            found = { value: message.value, key: message.key, headers: message.headers ?? {} };
          },
        });
        return found;
      })
      .finally(() => this.release());
    return untilAborted(work, signal);
  }

  /** Resolves once a read may start, its turn taken; rejects, out of the queue, if `signal` aborts first. */
  private async turn(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.active < MAX_CONCURRENT_READS) {
      this.active++;
      return;
    }
    // The turn is handed over by the read that ends (release), so none is taken twice.
    return new Promise<void>((resolve, reject) => {
      const go = () => {
        signal.removeEventListener('abort', leave);
        resolve();
      };
      const leave = () => {
        this.waiting.splice(this.waiting.indexOf(go), 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', leave, { once: true });
      this.waiting.push(go);
    });
  }

  /**
   * A read has ended: its turn goes to the read that asked last, if any. Newest first: in a burst the oldest
   * waiters are nearest their deadline, and a read given up mid-way still holds its turn through its group join.
   */
  private release(): void {
    const next = this.waiting.pop();
    if (next) next();
    else this.active--;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.admin.close();
  }
}
