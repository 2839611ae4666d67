/**
 * The DLQ publisher's own rules, in milliseconds, with kafkajs's producer replaced by a scripted one (the real
 * broker is in test/it_dlq_publisher.test.ts and test/it_dead_letter_outage.test.ts): how it retries, stops
 * when its caller does, and never sends a dead letter again while a try of it is in flight or after it landed.
 * The stand-in: test/support/dlqPublisherStandIn.ts; a producer made anew: dlqPublisherRenewal.test.ts.
 */
import { Writable } from 'node:stream';
import { buildDlqRecord } from '../../src/contract';
import { DlqPublisher, ERROR_CLASS_LABELS } from '../../src/kafka/dlqPublisher';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';
import {
  connectionLost,
  pendingSend,
  publisher,
  record,
  scriptedKafka,
} from '../support/dlqPublisherStandIn';

describe('DLQ publisher', () => {
  it('uses a producer without sequence numbers, one request in flight, and no retries of its own', async () => {
    const { kafka, producerConfigs } = scriptedKafka();
    await publisher(kafka).dlq.publish(record('a'), null);
    expect(producerConfigs).toEqual([
      expect.objectContaining({ idempotent: false, maxInFlightRequests: 1, retry: { retries: 0 } }),
    ]);
  });

  it('waits for every in-sync replica to acknowledge (acks=-1), so min.insync.replicas guards dead letters', async () => {
    const { kafka, acks } = scriptedKafka();
    await publisher(kafka).dlq.publish(record('a'), null);
    expect(acks).toEqual([-1]);
  });

  it.each([
    [1, -1, undefined],
    [3, 3, '2'],
  ])(
    'declares a missing DLQ topic on %i broker(s) with replication factor %i and min ISR %s, besides its retention and size',
    async (brokers, rf, isr) => {
      const { kafka, cluster, sent } = scriptedKafka();
      cluster.brokers = brokers;
      cluster.topics = [];
      await publisher(kafka).dlq.publish(record('a'), null);
      expect(sent).toEqual(['id-a']);
      expect(cluster.created).toHaveLength(1);
      const [topic] = cluster.created;
      expect(topic).toMatchObject({ topic: record('a').topic, replicationFactor: rf });
      const configs = Object.fromEntries((topic?.configEntries ?? []).map((c) => [c.name, c.value]));
      expect(configs).toEqual({
        'retention.ms': '1209600000',
        'max.message.bytes': String(8 * 1024 * 1024),
        ...(isr ? { 'min.insync.replicas': isr } : {}),
      });
    },
  );

  it('retries failed sends until one is acknowledged, and counts the dead letter once', async () => {
    const { kafka, sent } = scriptedKafka(connectionLost(), connectionLost(), 'ok');
    const { dlq, metrics } = publisher(kafka);
    await dlq.publish(record('a'), null);
    expect(sent).toEqual(['id-a', 'id-a', 'id-a']);
    expect((await metrics.dlqSent.get()).values.map((v) => v.value)).toEqual([1]);
  });

  it('counts each dead letter under its type, error class and HTTP status (dlq summary groups the same way)', async () => {
    const { kafka } = scriptedKafka('ok', 'ok', 'ok');
    const { dlq, metrics } = publisher(kafka);
    const failed = (id: string, error: string, status: number | null) => ({
      ...record(id),
      error,
      http_status: status,
    });
    await dlq.publish(failed('a', 'runs API answered 422: unknown workflow_ref a@v1', 422), null);
    await dlq.publish(
      failed('b', 'RETRY_MAX_ATTEMPTS (3) spent; last: runs API answered 422: other', 422),
      null,
    );
    await dlq.publish(failed('c', 'runs API request failed: ECONNRESET (connection reset)', null), null);
    const values = (await metrics.dlqSent.get()).values.map((v) => ({ labels: v.labels, value: v.value }));
    const topic = record('a').topic;
    const type = record('a').type;
    expect(values).toEqual([
      { labels: { topic, type, error_class: 'runs API answered 422', http_status: '422' }, value: 2 },
      {
        labels: { topic, type, error_class: 'runs API request failed: ECONNRESET', http_status: 'none' },
        value: 1,
      },
    ]);
  });

  it('gives the first error classes their own label and counts any later one as "other": the series stay bounded', async () => {
    const n = ERROR_CLASS_LABELS + 5;
    const { kafka } = scriptedKafka();
    const { dlq, metrics } = publisher(kafka);
    for (let i = 0; i < n; i++)
      await dlq.publish(
        {
          ...record(`e${i}`),
          error: `rule word${String.fromCharCode(97 + (i % 26))}${Math.floor(i / 26)}x broken`,
        },
        null,
      );
    // A class seen before keeps its own label after the cap.
    await dlq.publish({ ...record('again'), error: 'rule worda0x broken' }, null);
    const values = (await metrics.dlqSent.get()).values;
    expect(values).toHaveLength(ERROR_CLASS_LABELS + 1);
    expect(values.find((v) => v.labels.error_class === 'other')?.value).toBe(5);
    expect(values.find((v) => v.labels.error_class === 'rule worda0x broken')?.value).toBe(2);
  });

  it('stops retrying when the caller’s deadline passes, naming the last failure', async () => {
    const { kafka, sent } = scriptedKafka(...Array.from({ length: 50 }, connectionLost));
    const deadline = new AbortController();
    setTimeout(() => deadline.abort(), 600);
    await expect(
      publisher(kafka).dlq.publish(record('a'), null, { signal: deadline.signal }),
    ).rejects.toThrow(/not published before the deadline \(\d+ failed tries; last: Connection error/);
    // It tried more than once within the deadline.
    expect(sent.length).toBeGreaterThan(1);
  });

  it('rejects with the caller’s own reason (a Temporal cancellation stays one) while a send is on the wire', async () => {
    const wire = pendingSend();
    const { kafka } = scriptedKafka(wire.answered);
    const cancel = new AbortController();
    const cancelled = Object.assign(new Error('TIMED_OUT'), { name: 'CancelledFailure' });
    const publishing = publisher(kafka).dlq.publish(record('a'), null, { signal: cancel.signal });
    cancel.abort(cancelled);
    await expect(publishing).rejects.toBe(cancelled);
    wire.land();
  });

  it('sends a dead letter once when a later attempt asks for it while the first try is still on the wire', async () => {
    const wire = pendingSend();
    const { kafka, sent } = scriptedKafka(wire.answered);
    const { dlq } = publisher(kafka);
    const first = new AbortController();
    const gaveUp = dlq.publish(record('a'), null, { signal: first.signal });
    first.abort();
    await expect(gaveUp).rejects.toThrow(/not published before the deadline/);
    const retried = dlq.publish(record('a'), null);
    wire.land();
    await retried;
    expect(sent).toEqual(['id-a']);
  });

  it('does not send again a dead letter that landed after its caller had given up', async () => {
    const wire = pendingSend();
    const { kafka, sent } = scriptedKafka(wire.answered);
    const { dlq } = publisher(kafka);
    const first = new AbortController();
    const gaveUp = dlq.publish(record('a'), null, { signal: first.signal });
    first.abort();
    await expect(gaveUp).rejects.toThrow();
    wire.land();
    await new Promise((r) => setImmediate(r));
    await dlq.publish(record('a'), null);
    await dlq.publish(record('b'), null);
    expect(sent).toEqual(['id-a', 'id-b']);
  });

  it('lets a try on the wire finish before it disconnects', async () => {
    const wire = pendingSend();
    const { kafka } = scriptedKafka(wire.answered);
    const { dlq, metrics } = publisher(kafka);
    const first = new AbortController();
    const gaveUp = dlq.publish(record('a'), null, { signal: first.signal });
    first.abort();
    await expect(gaveUp).rejects.toThrow();
    let closed = false;
    const closing = dlq.close().then(() => (closed = true));
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    wire.land();
    await closing;
    expect((await metrics.dlqSent.get()).values.map((v) => v.value)).toEqual([1]);
  });

  it('logs each dead letter with the tenant, dispatch, workflow, Temporal run and trace it names', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { kafka } = scriptedKafka('ok');
    const logger = createLogger('unit', 'info', { format: 'json', destination });
    const dlq = new DlqPublisher(kafka, createMetrics({ defaultMetrics: false }), logger);
    await dlq.publish(
      buildDlqRecord({
        id: 'id-t',
        timestamp: 0,
        type: 'dispatch_failure',
        tenant: 'acme',
        dispatchKey: 'd-9',
        runId: 'run-0009',
        error: 'HTTP 422',
        source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '1', timestamp: '0' },
        headers: { traceparent: Buffer.from(traceparent) },
        value: '{}',
      }),
      null,
    );
    expect(lines.find((l) => l.msg === 'dead-lettered')).toMatchObject({
      tenant: 'acme',
      dispatch_key: 'd-9',
      workflow_id: 'dispatch:acme:d-9',
      temporal_run_id: 'run-0009',
      traceparent,
    });
  });
});
