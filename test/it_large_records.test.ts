/**
 * Records at the size limit, under the processes' heap limits (RELAY_HEAP): ~0.9 MB dispatches whose JSON
 * expands twenty-fold once parsed (hundreds of thousands of empty objects), all in flight at once, are relayed
 * without crashing the ingester or the worker (whose workflow sandbox once ran out of heap on them: the input
 * now travels as text), and a record whose input would encode beyond Temporal's payload limit (its escaped
 * quotes are escaped again inside the workflow input) is dead-lettered with its reason instead of stalling its
 * partition.
 */
import crypto from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { peakRssMiB } from '../tools/bench/measure';
import { buildDlqRecord, topics } from '../src/contract';
import { DlqPublisher } from '../src/kafka/dlqPublisher';
import { ensureTopics } from '../src/kafka/topics';
import { createLogger } from '../src/logger';
import { createMetrics } from '../src/metrics';
import { readTopicToEnd } from './support/dlqTopic';
import { uniqueName } from './support/names';
import { type Harness, createHarness } from './support/relayHarness';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

const RECORD_BYTES = 900_000;

/** A valid dispatch whose `input` is `[{},{},…]`, padded to about `bytes`. */
function expanding(key: string, bytes: number): Buffer {
  const head = `{"workflow_ref":"big@v1","goal_id":null,"dispatch_key":"${key}","input":[`;
  const n = Math.floor((bytes - head.length - 2) / 3);
  return Buffer.from(`${head}${Array.from({ length: n }, () => '{}').join(',')}]}`);
}

/** A valid dispatch whose input is one string, padded to about `bytes`. */
function stringInput(key: string, bytes: number): Buffer {
  const head = `{"workflow_ref":"big@v1","goal_id":null,"dispatch_key":"${key}","input":"`;
  return Buffer.from(`${head}${'x'.repeat(bytes - head.length - 2)}"}`);
}

/** A valid dispatch within DISPATCH_MAX_BYTES whose input, a string of escaped quotes, encodes to 2× its size. */
function quoteBomb(key: string, bytes: number): Buffer {
  const head = `{"workflow_ref":"big@v1","goal_id":null,"dispatch_key":"${key}","input":"`;
  const n = Math.floor((bytes - head.length - 2) / 2);
  return Buffer.from(`${head}${'\\"'.repeat(n)}"}`);
}
/** Over half of Temporal's limit (2 MiB less the relay's 64 KiB headroom), under DISPATCH_MAX_BYTES (1 MiB). */
const BOMB_BYTES = 1_030_000;

describe('records at the size limit, under the heap limits', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await createHarness({ partitions: 4 });
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it('relays 0.9 MB records that expand when parsed, dead-letters one Temporal would refuse, and no process crashes', async () => {
    const worker = await h.startWorker();
    const ingester = await h.startIngester();
    const big = Array.from({ length: 8 }, (_, i) => `big-${i}`);
    const bombs = ['bomb-0', 'bomb-1'];
    const small = Array.from({ length: 4 }, (_, i) => `small-${i}`);
    // One record per produce request: each is close to the broker's 1 MB message limit.
    for (const [i, key] of big.entries()) {
      await h.producer.send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: [{ partition: i % 4, value: expanding(key, RECORD_BYTES) }],
      });
    }
    for (const [i, key] of bombs.entries()) {
      await h.producer.send({
        topic: topics.dispatch(h.tenant),
        acks: -1,
        messages: [{ partition: i, value: quoteBomb(key, BOMB_BYTES) }],
      });
    }
    // Not UTF-8, so its dead letter carries it as base64 (4/3 of its size): more than the broker's 1 MB default.
    const binary = crypto.randomBytes(1_040_000);
    binary[0] = 0xff;
    await h.producer.send({
      topic: topics.dispatch(h.tenant),
      acks: -1,
      messages: [{ partition: 3, value: binary }],
    });
    await h.producer.send({
      topic: topics.dispatch(h.tenant),
      acks: -1,
      messages: small.map((k, i) => ({ partition: i % 4, value: h.dispatchValue(k) })),
    });

    await h.api.waitFor(
      (api) => [...big, ...small].every((k) => api.runs.has(k)),
      240_000,
      'every big and small dispatch to have a run',
    );
    const dlq = await h.readDlq(3, 120_000);
    expect(dlq.map((r) => r.dispatch_key ?? 'binary').sort()).toEqual(['binary', ...bombs]);
    for (const key of bombs) {
      const r = dlq.find((d) => d.dispatch_key === key)!;
      expect(r.type).toBe('malformed_dispatch');
      expect(r.error).toMatch(/^workflow input encodes to \d+ bytes, over the \d+ Temporal accepts/);
      // Whole, though its dead letter (the escaped quotes escaped once more) is twice the broker's default limit.
      expect(r.payload).toBe(quoteBomb(key, BOMB_BYTES).toString('utf8'));
    }
    const binaryDlq = dlq.find((d) => d.dispatch_key === null)!;
    expect(binaryDlq.error).toMatch(/^value is not valid UTF-8/);
    expect(Buffer.from(binaryDlq.payload_base64 ?? '', 'base64').equals(binary)).toBe(true);
    // The big inputs reached the API whole.
    const published = JSON.parse(expanding('big-0', RECORD_BYTES).toString('utf8')) as { input: unknown[] };
    const sent = h.api.requestsFor('big-0')[0]?.json as { input: unknown[] } | undefined;
    expect(published.input.length).toBeGreaterThan(290_000);
    expect(sent?.input).toEqual(published.input);

    // Neither process died on the way (the harness would have had to restart them: it does not).
    expect(ingester.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();
    await waitFor(async () => (await fetch(`http://127.0.0.1:${ingester.metricsPort}/healthz`)).ok, {
      what: 'ingester healthy',
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${worker.metricsPort}/healthz`)).ok, {
      what: 'worker healthy',
    });
    await h.expectCommittedAtLogEnd();
  }, 600_000);

  it('150 large dispatches waiting on a slow API: none crashes the worker, each gets its run, and a refused one is dead-lettered whole', async () => {
    // Once, the worker (128 MiB heap) ran out of memory with 41 such calls waiting. Large calls now run a few
    // at a time per worker (POIMEN_WORKER_MAX_LARGE_ACTIVITIES), reading their input from the start event;
    // it_worker_memory holds the worker to the manifest's memory limit.
    // 150 calls queue behind the slow API's 2 s answers; at the shipped 10 s the queued ones would time out.
    const t = await createHarness({ partitions: 4, env: { RUNS_API_TIMEOUT_MS: '30000' } });
    try {
      const n = 150;
      const keys = Array.from({ length: n }, (_, i) => `inflight-${i}`);
      t.api.always({ kind: 'delay', ms: 2_000 });
      t.api.scriptFor('refused-big', { kind: 'status', status: 422, body: 'unknown workflow_ref' });
      const worker = await t.startWorker();
      await t.startIngester();
      const refused = expanding('refused-big', RECORD_BYTES);
      await t.producer.send({
        topic: topics.dispatch(t.tenant),
        acks: -1,
        messages: [{ partition: 0, value: refused }],
      });
      for (const [i, key] of keys.entries()) {
        await t.producer.send({
          topic: topics.dispatch(t.tenant),
          acks: -1,
          messages: [{ partition: i % 4, value: stringInput(key, RECORD_BYTES) }],
        });
      }
      await t.api.waitFor(
        (api) => keys.every((k) => api.runs.has(k)) || worker.child.exitCode !== null,
        300_000,
        'every large dispatch to have a run',
      );
      expect(worker.child.exitCode).toBeNull();
      expect(keys.filter((k) => t.api.requestsFor(k).length !== 1)).toEqual([]);
      const sent = t.api.requestsFor('inflight-7')[0]!.json as { input: string };
      expect(sent.input).toHaveLength(
        JSON.parse(stringInput('inflight-7', RECORD_BYTES).toString('utf8')).input.length,
      );
      // Large calls run a few at a time per worker (8 slots by default), never all at once.
      expect(t.api.maxInFlight).toBeGreaterThan(1);
      expect(t.api.maxInFlight).toBeLessThanOrEqual(8);
      // The dead letter carries the source record whole, read back from Kafka (contract §6).
      const [dead] = await t.readDlq(1, 120_000);
      expect(dead).toMatchObject({ type: 'dispatch_failure', dispatch_key: 'refused-big', http_status: 422 });
      expect(dead!.payload).toBe(refused.toString('utf8'));
      process.stderr.write(`[large in flight] worker peak RSS ${peakRssMiB(worker.child.pid)} MiB\n`);
      await t.expectCommittedAtLogEnd();
    } finally {
      await t.cleanup();
    }
  }, 600_000);

  it('a DLQ topic made by hand with a smaller max.message.bytes still gets the dead letter, without its payload', async () => {
    const tenant = uniqueName('tsmall').replaceAll('-', '').slice(0, 30);
    const kafka = new Kafka({ brokers: testServices().kafkaBrokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const dlq = new DlqPublisher(kafka, createMetrics(), createLogger('test', 'silent'));
    try {
      await ensureTopics(admin, [
        {
          topic: topics.dlq(tenant),
          numPartitions: 1,
          configEntries: [{ name: 'max.message.bytes', value: '100000' }],
        },
      ]);
      const source = {
        topic: topics.dispatch(tenant),
        partition: 2,
        offset: '41',
        timestamp: '1700000000000',
      };
      const record = buildDlqRecord({
        id: crypto.randomUUID(),
        timestamp: Date.now(),
        type: 'malformed_dispatch',
        tenant,
        dispatchKey: 'too-big',
        error: 'value is not valid JSON',
        source,
        value: Buffer.from('x'.repeat(200_000)),
      });
      await dlq.publish(record, `${tenant}:too-big`);
      // Acknowledged above, so in the topic: read to its end, through the relay's own DLQ reader.
      const got = await readTopicToEnd(kafka, topics.dlq(tenant));
      expect(got).toHaveLength(1);
      expect(got[0]).toMatchObject({
        id: record.id,
        type: 'malformed_dispatch',
        dispatch_key: 'too-big',
        payload: null,
      });
      expect((got[0] as { error: string }).error).toMatch(
        /^value is not valid JSON \[payload omitted: the dead letter was \d+ bytes, more than \S+ accepts; the original record is \S+ partition 2 offset 41\]$/,
      );
    } finally {
      await dlq.close();
      await admin.deleteTopics({ topics: [topics.dlq(tenant)] }).catch(() => undefined);
      await admin.disconnect();
    }
  });
});
