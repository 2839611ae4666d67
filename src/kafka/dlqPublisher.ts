/**
 * Publishes dead-letter records (contract §6). One pooled producer per process (acks=-1), shared by every caller,
 * made anew when a topic it knew was deleted (./renewingClient.ts).
 * The DLQ topic is declared on first use when missing, with the contract's 14-day retention, so a tenant whose
 * topics were created by hand still gets its dead letters; `topics apply` is the normal path.
 *
 * The producer is not idempotent (docs/design.md, "Dead letters: at least once"): kafkajs 2.2.4 rolls an
 * idempotent producer's sequence number back after any failed produce, also when the broker wrote the batch
 * and only its answer was lost, and the next record to that partition then reuses the number and is acked as
 * a duplicate without being written. Without sequence numbers a lost answer can only make its own record be
 * written twice, under the same id.
 *
 * Retries live here, not in kafkajs: one kafkajs try at a time per dead letter, repeated until it succeeds or
 * the caller's signal aborts (a `deadLetter` activity's cancellation or deadline), so nothing keeps publishing
 * for a caller that has given up.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Admin, type Kafka, KafkaJSProtocolError, type Producer } from 'kafkajs';
import { type DlqRecord, dlqErrorClass, validTraceparent, withoutPayload } from '../contract';
import { errorChain } from '../errors';
import { type Logger, recordFields } from '../logger';
import type { RelayMetrics } from '../metrics';
import { untilAborted } from '../poll';
import { topicUnknown } from './errors';
import { RenewingClient } from './renewingClient';
import { DLQ_TOPIC_CONFIG, ensureTopics } from './topics';

/** How long a publish keeps trying when its caller gives no signal (the ingester retries the record itself). */
export const DEFAULT_PUBLISH_BUDGET_MS = 15_000;
/** Ids this process has had acknowledged, remembered so a retried attempt that comes later sends nothing. */
const REMEMBERED_IDS = 10_000;
/** Distinct `error_class` label values one process reports before the rest count as `other`. */
export const ERROR_CLASS_LABELS = 100;
const RETRY_INITIAL_MS = 250;
const RETRY_MAX_MS = 5_000;

export interface PublishOptions {
  /** Stops the retries: the publish then rejects (with the signal's reason when that is an Error). */
  signal?: AbortSignal;
  /** Called after each failed try, before the pause (the `deadLetter` activity heartbeats here). */
  onRetry?: (failures: number, err: unknown) => void;
  /** More Kafka headers beside `dlq-type` (`dlq send-test` marks its records here: contract/testDeadLetter.ts). */
  headers?: Record<string, string>;
}

/** One try's dead letter: the record, its Kafka key and extra headers, and the signal of the caller that started it. */
interface Letter {
  record: DlqRecord;
  key: string | Buffer | null;
  headers: Record<string, string> | undefined;
  signal: AbortSignal;
}

export class DlqPublisher {
  private readonly producer: RenewingClient<Producer>;
  private readonly admin: RenewingClient<Admin>;
  private readonly knownTopics = new Set<string>();
  /** The kafkajs try in flight per dead-letter id, which a later publish of the same id waits for. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Recently acknowledged ids, oldest first. */
  private readonly acked = new Set<string>();
  /** The error classes given their own label value so far (errorClassLabel). */
  private readonly errorClasses = new Set<string>();
  private closed = false;

  constructor(
    kafka: Kafka,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
  ) {
    this.producer = new RenewingClient(() =>
      kafka.producer({
        idempotent: false,
        // One produce request on the wire at a time: a connection lost mid-answer then repeats one dead letter,
        // not every one pipelined behind it.
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        // One try per send: publish() retries, and stops when its caller does.
        retry: { retries: 0 },
      }),
    );
    this.admin = new RenewingClient(() => kafka.admin());
  }

  /**
   * Resolves once the broker has acknowledged the record (acks=-1). Retries failed tries with backoff until
   * `signal` aborts (default: DEFAULT_PUBLISH_BUDGET_MS). A try already in flight when the caller gives up
   * cannot be called back from the wire; it may still land once, and a publish of the same dead letter in
   * this process waits for it instead of sending a second copy.
   */
  async publish(record: DlqRecord, key: string | Buffer | null, opts: PublishOptions = {}): Promise<void> {
    if (opts.signal) return this.publishUntil(record, key, opts.signal, opts);
    const budget = new AbortController();
    const timer = setTimeout(() => budget.abort(), DEFAULT_PUBLISH_BUDGET_MS);
    try {
      return await this.publishUntil(record, key, budget.signal, opts);
    } finally {
      clearTimeout(timer);
    }
  }

  private async publishUntil(
    record: DlqRecord,
    key: string | Buffer | null,
    signal: AbortSignal,
    { onRetry, headers }: PublishOptions,
  ): Promise<void> {
    let delayMs = RETRY_INITIAL_MS;
    let last: unknown;
    for (let failures = 0; ;) {
      if (this.closed) throw new Error('DLQ publisher is closed');
      if (signal.aborted) throw stopped(signal, failures, last);
      // Acknowledged after an earlier caller had given up on it (a timed-out attempt's try that landed).
      if (this.acked.has(record.id)) return;
      try {
        // kafkajs cannot abort a send: the try goes on, and a later publish of the same dead letter waits for it.
        await untilAborted(this.attempt({ record, key, headers, signal }), signal);
        return;
      } catch (err) {
        if (signal.aborted) throw stopped(signal, failures, err === signal.reason ? last : err);
        if (isPermanent(err)) throw err;
        last = err;
        failures++;
        if (failures === 1 || failures % 10 === 0) {
          this.logger.warn(
            { ...deadLetterFields(record), topic: record.topic, id: record.id, failures, err },
            'could not publish dead letter; retrying',
          );
        }
        onRetry?.(failures, err);
        await sleep(delayMs, undefined, { signal }).catch(() => undefined);
        delayMs = Math.min(delayMs * 2, RETRY_MAX_MS);
      }
    }
  }

  /** The try in flight for this dead letter, or a new one. */
  private attempt(letter: Letter): Promise<void> {
    const { record } = letter;
    const running = this.inFlight.get(record.id);
    if (running) return running;
    const started = this.sendOnce(letter).finally(() => {
      if (this.inFlight.get(record.id) === started) this.inFlight.delete(record.id);
    });
    // A caller that stopped waiting leaves this promise behind; its failure is reported to whoever waits next.
    started.catch(() => undefined);
    this.inFlight.set(record.id, started);
    return started;
  }

  private async sendOnce({ record, key, headers = {}, signal }: Letter): Promise<void> {
    if (!this.knownTopics.has(record.topic)) {
      const spec = { topic: record.topic, configEntries: DLQ_TOPIC_CONFIG };
      const created = await this.admin.use((admin) => ensureTopics(admin, [spec]));
      if (created.length > 0) this.logger.warn({ topic: record.topic }, 'declared missing DLQ topic');
      this.knownTopics.add(record.topic);
    }
    // A producer that knew a topic deleted since is made anew (./renewingClient.ts), and the send tried again on it
    // at once unless the caller that started this try has given up meanwhile.
    const send = (value: string) =>
      this.producer.use(
        (producer) =>
          producer.send({
            topic: record.topic,
            acks: -1,
            messages: [{ key, value, headers: { ...headers, 'dlq-type': record.type } }],
          }),
        { again: () => !signal.aborted },
      );
    const value = JSON.stringify(record);
    try {
      await send(value);
    } catch (err) {
      // Unknown to a new producer too: the topic is gone since it was declared (an operator purged the dead letters
      // by deleting it, and the producer never creates one). The next try declares it again, as the first did.
      if (topicUnknown(err)) this.knownTopics.delete(record.topic);
      // The broker refuses this record for its size, every time: retrying would stall the caller for good.
      if (!(err instanceof KafkaJSProtocolError && err.type === 'MESSAGE_TOO_LARGE')) throw err;
      const bytes = Buffer.byteLength(value);
      this.logger.warn(
        { ...deadLetterFields(record), topic: record.topic, bytes },
        'dead letter too large for its topic; publishing it without the payload',
      );
      await send(JSON.stringify(withoutPayload(record, bytes)));
    }
    this.acked.add(record.id);
    if (this.acked.size > REMEMBERED_IDS) this.acked.delete(this.acked.values().next().value!);
    this.metrics.dlqSent.inc({
      topic: record.topic,
      type: record.type,
      error_class: this.errorClassLabel(dlqErrorClass(record.error)),
      http_status: record.http_status === null ? 'none' : String(record.http_status),
    });
    this.logger.info(
      { ...deadLetterFields(record), topic: record.topic, type: record.type, error: record.error },
      'dead-lettered',
    );
  }

  /**
   * The error class as a metric label: the first ERROR_CLASS_LABELS distinct classes as they are, any later one as
   * `other`. The classes come from the relay's own reasons with values taken out, but a reason's words can still
   * carry a producer's text; the label's series stay bounded whatever producers send (`dlq summary` reads the
   * records themselves and groups them in full).
   */
  private errorClassLabel(cls: string): string {
    if (this.errorClasses.has(cls)) return cls;
    if (this.errorClasses.size >= ERROR_CLASS_LABELS) return 'other';
    this.errorClasses.add(cls);
    return cls;
  }

  /** Lets the tries in flight finish (each is bounded by kafkajs's timeouts), then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inFlight.values()]);
    await this.producer.close();
    await this.admin.close();
  }
}

/**
 * Refusals no retry can cure (e.g. TOPIC_AUTHORIZATION_FAILED): reported at once. Kafka's answer may come as it is
 * (a produce answer) or inside kafkajs's KafkaJSNonRetriableError (a topic's metadata fetched before the send).
 */
function isPermanent(err: unknown): boolean {
  return errorChain(err).some((e) => e instanceof KafkaJSProtocolError && !e.retriable);
}

/**
 * The error a stopped publish rejects with: the caller's own reason when it is an Error (a Temporal
 * cancellation stays a cancellation), else one naming the last failure.
 */
function stopped(signal: AbortSignal, failures: number, last: unknown): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name !== 'TimeoutError' && reason.name !== 'AbortError')
    return reason;
  const why = last instanceof Error ? last.message : last === undefined ? 'no try finished' : String(last);
  return new Error(`dead letter not published before the deadline (${failures} failed tries; last: ${why})`, {
    cause: last,
  });
}

/** The per-record log fields of a dead letter, from the record itself (it names its workflow and run). */
function deadLetterFields(record: DlqRecord): Record<string, string> {
  const traceparent = record.source.headers?.traceparent;
  return recordFields({
    tenant: record.tenant_id,
    dispatchKey: record.dispatch_key,
    workflowId: record.workflow_id ?? undefined,
    temporalRunId: record.run_id ?? undefined,
    traceparent: typeof traceparent === 'string' ? validTraceparent(traceparent) : undefined,
  });
}
