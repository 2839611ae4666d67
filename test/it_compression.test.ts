/**
 * Compressed records. Tenants' producers are Java services and librdkafka clients, commonly
 * configured with snappy, lz4 or zstd; kafkajs ships only gzip. Records of every Kafka codec, written by Apache
 * Kafka's own Java producer, must each be relayed exactly once and committed to the log end. And whatever goes
 * wrong in decoding a batch, one tenant's records never stop another tenant's.
 */
import fs from 'node:fs';
import { ConfigResourceTypes } from 'kafkajs';
import { topics } from '../src/contract';
import { findUndecodableBatches } from '../src/kafka/decodeProbe';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { createKafka } from '../src/kafka/client';
import { createLogger } from '../src/logger';
import { KAFKA_CODECS, produceWithJava, type JavaRecord } from './support/javaProducer';
import { uniqueTenant } from './support/names';
import { sendUndecodableBatch } from './support/poisonBatch';
import { metricValue } from './support/relay';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(240_000);

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

/** A dispatch whose input is large and repetitive for the first records, so batches span several codec blocks. */
function dispatchInput(codec: string, i: number): Record<string, unknown> {
  return i < 4 ? { codec, i, text: `${codec} dispatch ${i} `.repeat(2500) } : { codec, i, unicode: 'zoë ✓' };
}

describe('compressed records of every Kafka codec', () => {
  test('records of every codec (none, gzip, snappy, lz4, zstd) from the Java producer are each relayed exactly once, workflows complete, offsets committed to the log end', async () => {
    h = await createHarness({ partitions: 2 });
    await h.startWorker();
    await h.startIngester();
    const topic = topics.dispatch(h.tenant);

    // The broker must keep each batch as its producer compressed it (no recompression on the topic).
    const admin = h.kafka.admin();
    await admin.connect();
    const described = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['compression.type'] }],
      includeSynonyms: false,
    });
    await admin.disconnect();
    expect(described.resources[0]!.configEntries[0]!.configValue).toBe('producer');

    const records: JavaRecord[] = KAFKA_CODECS.flatMap((codec) =>
      Array.from({ length: 8 }, (_, i) => ({
        codec,
        partition: i % 2,
        key: `${h.tenant}:${codec}-${i}`,
        value: h.dispatchValue(`${codec}-${i}`, { input: dispatchInput(codec, i) }),
      })),
    );
    const reports = await produceWithJava(testServices().kafkaBrokers.join(','), topic, records);
    // The producer's own account: every codec sent its records, and the compressed ones really are compressed.
    expect(reports.map((r) => [r.codec, r.sent])).toEqual(KAFKA_CODECS.map((c) => [c, 8]));
    // Each codec's records travel as one batch per partition (JavaProducer.java), so the per-batch mean is stable.
    // A failure names the codec.
    const notCompressed = reports.filter((r) =>
      r.codec === 'none' ? r.compressionRate !== 1 : !(r.compressionRate !== null && r.compressionRate < 0.2),
    );
    expect(notCompressed).toEqual([]);

    const keys = records.map((r) => r.key.slice(h.tenant.length + 1));
    await h.api.waitFor(
      (api) => keys.every((k) => api.requestsFor(k).length > 0),
      90_000,
      `a POST for each of the ${keys.length} dispatches`,
    );
    for (const [idx, k] of keys.entries()) {
      const calls = h.api.requestsFor(k);
      expect(calls).toHaveLength(1);
      const sent = JSON.parse(records[idx]!.value) as { input: unknown };
      expect((calls[0]!.json as { input: unknown }).input).toEqual(sent.input);
      const result: unknown = await h.client.workflow.getHandle(h.wfId(k)).result();
      expect(result).toEqual({ run_id: h.api.runs.get(k), admission: 'created' });
    }
    expect(h.api.runs.size).toBe(keys.length);

    await h.expectCommittedAtLogEnd();
    const offsets = await h.offsets();
    expect(offsets.reduce((n, p) => n + p.high, 0)).toBe(records.length);
  });
});

describe('a record batch that cannot be decoded is isolated to its partition', () => {
  test('the decode probe names exactly the partition and offset of the batch that cannot be decoded', async () => {
    const a = uniqueTenant();
    const b = uniqueTenant();
    h = await createHarness({ tenant: a, partitions: 2 });
    const admin = h.kafka.admin();
    await admin.connect();
    await ensureTopics(admin, tenantTopicSpecs(b, { partitions: 2 }));
    await admin.disconnect();
    for (const t of [a, b]) {
      for (const partition of [0, 1]) {
        await h.producer.send({
          topic: topics.dispatch(t),
          acks: -1,
          messages: [0, 1, 2].map((i) => ({ partition, value: h.dispatchValue(`${t}-${partition}-${i}`) })),
        });
      }
    }
    const poisonOffset = await sendUndecodableBatch(h.producer, topics.dispatch(a), 1, [
      { key: `${a}:poison`, value: h.dispatchValue('poison') },
    ]);
    await h.producer.send({
      topic: topics.dispatch(a),
      acks: -1,
      messages: [{ partition: 1, value: h.dispatchValue('after') }],
    });

    // The relay's own client (codecs registered), from the start of every partition of both tenants.
    const kafka = createKafka(
      { brokers: testServices().kafkaBrokers, clientId: 'it-decode-probe', groupId: 'unused', ssl: false },
      createLogger('it-decode-probe', 'error'),
    );
    const targets = [a, b].flatMap((t) =>
      [0, 1].map((partition) => ({ topic: topics.dispatch(t), partition, offset: '0' })),
    );
    const found = await findUndecodableBatches(kafka, targets);
    expect(found).toEqual([
      {
        topic: topics.dispatch(a),
        partition: 1,
        offset: poisonOffset,
        codec: 'gzip',
        reason: expect.stringContaining('header'),
      },
    ]);
    expect(poisonOffset).toBe('3');
  });

  test("one tenant's undecodable batch stops neither another tenant nor its topic's other partition; it is not skipped, and logs and metrics name it", async () => {
    const a = uniqueTenant();
    const b = uniqueTenant();
    h = await createHarness({
      tenant: a,
      partitions: 2,
      env: { DISPATCH_TOPIC_PATTERN: `^poimen\\.(${a}|${b})\\.dispatch$` },
    });
    const admin = h.kafka.admin();
    await admin.connect();
    await ensureTopics(admin, tenantTopicSpecs(b, { partitions: 2 }));
    await admin.disconnect();
    await h.startWorker();
    const ingester = await h.startIngester();
    // The dispatch keys of both tenants are distinct, so the API double's per-key view covers both.
    const send = (tenant: string, partition: number, key: string) =>
      h.producer.send({
        topic: topics.dispatch(tenant),
        acks: -1,
        messages: [{ partition, key: `${tenant}:${key}`, value: h.dispatchValue(key) }],
      });
    const relayed = (keys: string[], what: string, timeoutMs = 60_000) =>
      h.api.waitFor((api) => keys.every((k) => api.requestsFor(k).length === 1), timeoutMs, what);

    for (const [t, p] of [
      [a, 0],
      [a, 1],
      [b, 0],
      [b, 1],
    ] as const)
      await send(t, p, `${t}-p${p}-before`);
    await relayed(
      [`${a}-p0-before`, `${a}-p1-before`, `${b}-p0-before`, `${b}-p1-before`],
      'both tenants relayed before the bad batch',
    );

    // Tenant a, partition 0: a batch the broker accepts (and Java consumers read) but the relay cannot decode.
    const poisonOffset = await sendUndecodableBatch(h.producer, topics.dispatch(a), 0, [
      { key: `${a}:poison-0`, value: h.dispatchValue('poison-0') },
      { key: `${a}:poison-1`, value: h.dispatchValue('poison-1') },
    ]);
    expect(poisonOffset).toBe('1');
    for (const [t, p] of [
      [a, 0],
      [a, 1],
      [b, 0],
      [b, 1],
    ] as const)
      await send(t, p, `${t}-p${p}-after`);

    // The other tenant, and the bad batch's own topic's other partition, go on being relayed.
    await relayed(
      [`${b}-p0-after`, `${b}-p1-after`, `${a}-p1-after`],
      "tenant b's records and tenant a's other partition relayed after tenant a's undecodable batch",
    );

    // The bad batch is not skipped: its partition waits at the batch, named in the log and in a gauge.
    expect(h.api.requestsFor('poison-0')).toHaveLength(0);
    expect(h.api.requestsFor(`${a}-p0-after`)).toHaveLength(0);
    const committed = await h.offsets();
    expect(committed.find((p) => p.partition === 0)).toMatchObject({ committed: 1, high: 4 });
    await waitFor(
      async () =>
        metricValue(await ingester.metrics(), 'poimen_ingest_undecodable_partitions', {
          topic: topics.dispatch(a),
          partition: '0',
        }) === 1,
      { timeoutMs: 30_000, what: 'poimen_ingest_undecodable_partitions naming the partition' },
    );
    const log = fs.readFileSync(ingester.logFile, 'utf8');
    const line = log
      .split('\n')
      .find(
        (l) =>
          l.includes('could not decode a gzip-compressed record batch') && l.includes(topics.dispatch(a)),
      );
    expect(line).toBeDefined();
    expect(line).toContain('"partition":0');
  });
});
