/**
 * Batches that handed their turn back to kafkajs and go on from memory with their partition paused
 * (batchTurn.ts): a batch past its slice, or one whose tenant waits for room (admission.ts). Their partition is
 * fetched again only once such a batch is done, so a record is decoded once however often its tenant waits.
 *
 * What they keep is counted by the buffers they keep alive, not by their records' sizes: a record's key, value
 * and headers are views into the fetch response that brought it, so a kept batch keeps that whole response. At
 * most `maxBytes` are kept: a batch that would go over ends its turn instead, its rest fetched again later.
 */
import type { Gauge } from 'prom-client';
import type { KafkaConsumer, KafkaRecord } from '../kafka/port';
import type { Logger } from '../logger';
import type { TenantAdmission } from './admission';
import type { GroupGeneration } from './generation';
import type { GroupMembership } from './membership';
import type { Pausable, PausedPartitions } from './pausedPartitions';

/**
 * How long a kept batch waits for room before it lets its fetch go and waits in Kafka: a tenant whose dispatches
 * stay open (its API down, retried for up to RETRY_MAX_DURATION_MS) would hold its share of the kept bytes that
 * long, and past the bound the others' waiting batches refetch at every start. A wait of a few dispatches' time
 * stays kept; a longer one costs one fetch per KEPT_WAIT_MS at most.
 */
export const KEPT_WAIT_MS = 10_000;

export interface KeptBatchParts {
  maxBytes: number;
  gauge: Gauge;
  membership: GroupMembership;
  paused: PausedPartitions;
  admission: TenantAdmission;
  logger: Logger;
}

/** One kept batch's partition. */
export interface KeptPartition {
  topic: string;
  partition: number;
}

export class KeptBatches {
  private readonly refs = new Map<ArrayBufferLike, number>();
  private bytes = 0;
  /**
   * Partitions whose kept batch is running, each with a token of that batch: their resume waits for its end
   * (`pausable`). A batch of a run kafkajs restarted after a crash (same consumer, pauses forgotten) may end
   * after the next run's batch of the partition is kept: its end is then not the partition's.
   */
  private readonly running = new Map<string, object>();
  /** Kept batches waiting for room: stopping the consumer wakes them to finish (`wakeAll`). */
  private readonly waiting = new Set<() => void>();

  constructor(private readonly o: KeptBatchParts) {}

  /**
   * Pauses the partition and keeps the batch's fetched bytes; returns how to let the batch go once it is done
   * (`done`), or undefined when its bytes do not fit or the consumer cannot pause now (kafkajs between a crash
   * and its restart).
   */
  keep(
    consumer: KafkaConsumer,
    at: KeptPartition,
    records: readonly KafkaRecord[],
  ): (() => boolean) | undefined {
    const letGo = this.hold(records);
    if (!letGo) return undefined;
    try {
      consumer.pause([{ topic: at.topic, partitions: [at.partition] }]);
    } catch (err) {
      letGo();
      this.o.logger.debug({ err, ...at }, 'could not pause a partition to keep its batch');
      return undefined;
    }
    const key = keyOf(at);
    const token = {};
    this.running.set(key, token);
    return () => {
      letGo();
      if (this.running.get(key) !== token) return false;
      this.running.delete(key);
      return true;
    };
  }

  /**
   * A kept batch is done (`letGo` from `keep`): its partition is fetched again from where the batch ended, unless
   * it waits for room instead (`then.resume` false: admission resumes it), an outage's backoff holds it (that
   * resumes it), the consumer was replaced (the new one holds no pause) or the ingester is stopping. False when
   * the partition is no longer this batch's (kafkajs restarted the consumer and a later batch took it over): it
   * is then left alone.
   */
  done(consumer: KafkaConsumer, at: KeptPartition, letGo: () => boolean, then: { resume: boolean }): boolean {
    if (!letGo()) return false;
    const { membership, paused } = this.o;
    if (!then.resume || !membership.current(consumer) || paused.holds(at.topic, at.partition)) return true;
    try {
      consumer.resume([{ topic: at.topic, partitions: [at.partition] }]);
    } catch (err) {
      this.o.logger.debug({ err, ...at }, 'could not resume a partition after its kept batch');
    }
    return true;
  }

  /**
   * Until the tenant has room (admission.ts), an operator pauses it, the generation closes (a rejoin), or the
   * consumer stops (`wakeAll`): 'woken', and the caller looks again. 'too long' after KEPT_WAIT_MS without room:
   * the batch should let its fetch go and wait in Kafka.
   */
  room(
    tenant: string,
    at: KeptPartition,
    generation: GroupGeneration,
    /** Given the wait's end, for the batch to end it early (a record of its failed). */
    early: (wake: () => void) => void,
  ): Promise<'woken' | 'too long'> {
    // An outage whose backoff already resumed the partition, its record not tried again, is over as far as anyone
    // knows: its record was only refused a slot. Left, it would keep the process unready until room came back.
    this.o.paused.forgetResumed(at.topic, at.partition);
    return new Promise((resolve) => {
      let woken = false;
      let unwatch = (): void => undefined;
      let asked = false;
      const end = (how: 'woken' | 'too long') => {
        if (woken) return;
        woken = true;
        clearTimeout(limit);
        this.waiting.delete(wake);
        unwatch();
        // Woken by anything but admission: its entry would keep this batch, fetch and all, until the tenant's room.
        if (asked) this.o.admission.cancelWait(tenant, keyOf(at), wake);
        resolve(how);
      };
      const wake = () => end('woken');
      const limit = setTimeout(() => end('too long'), KEPT_WAIT_MS).unref();
      this.waiting.add(wake);
      early(wake);
      unwatch = generation.whenClosing(wake);
      if (woken) return;
      asked = true;
      // A pause of the tenant ends the wait too: the batch then ends rather than hold its fetch for the pause.
      this.o.admission.whenRoom(tenant, keyOf(at), wake, { orPaused: true });
    });
  }

  /**
   * A batch of the partition that was not kept ends: the partition is its to leave. A kept batch of the run before
   * (kafkajs restarted the consumer, forgetting its pauses) may still be finishing; its end then leaves it alone.
   */
  takeOver(at: KeptPartition): true {
    this.running.delete(keyOf(at));
    return true;
  }

  /** The consumer is being stopped: every kept batch waiting for room looks again, and finishes. */
  wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
  }

  /**
   * The consumer a record's outage pauses and resumes (pausedPartitions.ts): while the partition's kept batch
   * runs, its resume waits for the batch's end (`done`), or kafkajs would fetch records still in flight.
   */
  pausable(consumer: KafkaConsumer, at: KeptPartition): Pausable {
    const key = keyOf(at);
    return {
      pause: (t) => consumer.pause(t),
      resume: (t) => {
        if (!this.running.has(key)) consumer.resume(t);
      },
    };
  }

  get keptBytes(): number {
    return this.bytes;
  }

  /** Keeps the buffers under `records` if they fit; returns how to let them go (idempotent). */
  private hold(records: readonly KafkaRecord[]): (() => void) | undefined {
    const buffers = buffersUnder(records);
    let added = 0;
    for (const b of buffers) if (!this.refs.has(b)) added += b.byteLength;
    if (added > 0 && this.bytes + added > this.o.maxBytes) return undefined;
    for (const b of buffers) this.refs.set(b, (this.refs.get(b) ?? 0) + 1);
    this.moveBy(added);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      let freed = 0;
      for (const b of buffers) {
        const n = this.refs.get(b)! - 1;
        if (n > 0) this.refs.set(b, n);
        else {
          this.refs.delete(b);
          freed += b.byteLength;
        }
      }
      this.moveBy(-freed);
    };
  }

  private moveBy(delta: number): void {
    if (delta === 0) return;
    this.bytes += delta;
    this.o.gauge.set(this.bytes);
  }
}

const keyOf = (at: KeptPartition) => `${at.topic}/${at.partition}`;

function buffersUnder(records: readonly KafkaRecord[]): Set<ArrayBufferLike> {
  const buffers = new Set<ArrayBufferLike>();
  const add = (v: unknown) => {
    if (Buffer.isBuffer(v)) buffers.add(v.buffer);
  };
  for (const r of records) {
    add(r.key);
    add(r.value);
    for (const h of Object.values(r.headers ?? {})) {
      if (Array.isArray(h)) h.forEach(add);
      else add(h);
    }
  }
  return buffers;
}
