/**
 * The DLQ publisher (the relay's own class, in this process) against the real broker. Many
 * dead letters are published at once, as concurrent `deadLetter` activities and the ingester do, while the
 * broker is killed or a produce response is lost on the wire; every one of them must reach the DLQ topic.
 * The topic is read to its end afterwards, so a duplicate shows as well as a loss.
 */
import net from 'node:net';
import type { ISocketFactory, Kafka } from 'kafkajs';
import { type DlqRecord, buildDlqRecord, dispatchRecordKey, topics } from '../src/contract';
import { dlqRecordId } from '../src/contract';
import { createKafka } from '../src/kafka/client';
import { DlqPublisher } from '../src/kafka/dlqPublisher';
import { ensureTopics, tenantTopicSpecs } from '../src/kafka/topics';
import { createLogger } from '../src/logger';
import { createMetrics } from '../src/metrics';
import { portInUse } from '../devstack/stack/processes';
import { idCounts, readTopicToEnd } from './support/dlqTopic';
import { startService, stopService } from './support/faults';
import { uniqueName, uniqueTenant } from './support/names';
import { testServices } from './support/testEnv';
import { waitFor } from './support/wait';

jest.setTimeout(300_000);

const logger = createLogger('it-dlq-publisher', 'silent');

function kafkaClient(socketFactory?: ISocketFactory): Kafka {
  const cfg = {
    brokers: testServices().kafkaBrokers,
    clientId: uniqueName('it-dlq'),
    groupId: '-',
    ssl: false,
  };
  return createKafka(cfg, logger, socketFactory ? { socketFactory } : {});
}

function deadLetter(tenant: string, i: number): DlqRecord {
  const key = `dl-${i}`;
  return buildDlqRecord({
    id: dlqRecordId(`${tenant}/${key}`),
    timestamp: Date.now(),
    type: 'dispatch_failure',
    tenant,
    dispatchKey: key,
    runId: `run-${i}`,
    error: 'HTTP 422',
    httpStatus: 422,
    retryCount: 1,
    maxRetries: 10,
    targetUrl: 'http://127.0.0.1:1/v1/runs',
    source: {
      topic: topics.dispatch(tenant),
      partition: 0,
      offset: String(i),
      timestamp: String(Date.now()),
    },
    value: JSON.stringify({ workflow_ref: 'w@1', input: { i }, goal_id: null, dispatch_key: key }),
  });
}

/**
 * Publishes until the publisher reports success, as Temporal retries a failed `deadLetter` activity (and the
 * ingester a failed record). Returns how many calls failed before the one that succeeded.
 */
async function publishUntilAcked(dlq: DlqPublisher, tenant: string, record: DlqRecord): Promise<number> {
  const deadline = Date.now() + 180_000;
  for (let failures = 0; ; failures++) {
    try {
      await dlq.publish(record, dispatchRecordKey(tenant, record.dispatch_key!));
      return failures;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function compare(sent: DlqRecord[], counts: Map<string, number>) {
  const missing = sent.filter((r) => !counts.has(r.id)).map((r) => r.dispatch_key);
  const extra = [...counts.keys()].filter((id) => !sent.some((r) => r.id === id));
  const duplicates = [...counts.values()].reduce((n, c) => n + (c - 1), 0);
  return { missing, extra, duplicates };
}

async function dlqTopicFor(kafka: Kafka): Promise<string> {
  const tenant = uniqueTenant();
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, tenantTopicSpecs(tenant, {}));
  await admin.disconnect();
  return tenant;
}

describe('DLQ publisher under broker faults: every dead letter reaches the topic', () => {
  let dlq: DlqPublisher | undefined;
  afterEach(async () => {
    await dlq?.close();
    dlq = undefined;
  });

  test('dead letters published 120 at a time while the broker is killed (SIGKILL) and restarted, three times: every id reaches the DLQ topic', async () => {
    const kafka = kafkaClient();
    const tenant = await dlqTopicFor(kafka);
    dlq = new DlqPublisher(kafka, createMetrics({ defaultMetrics: false }), logger);
    // Warm the producer up, so the first kill lands among produce requests rather than during connection set-up.
    const sent = [deadLetter(tenant, -1)];
    await dlq.publish(sent[0]!, null);
    const port = Number(testServices().kafkaBrokers[0]!.split(':').pop());

    const rounds: { ackedBeforeKill: number; failedCalls: number }[] = [];
    for (let round = 0; round < 3; round++) {
      const records = Array.from({ length: 120 }, (_, i) => deadLetter(tenant, round * 1000 + i));
      sent.push(...records);
      let acked = 0;
      const publishing = records.map((r) => publishUntilAcked(dlq!, tenant, r).finally(() => acked++));
      // Each round kills at a different point of the stream.
      await waitFor(() => acked >= 10 + round * 20, { intervalMs: 1, what: 'dead letters to be acked' });
      await stopService('kafka', 'SIGKILL');
      const ackedBeforeKill = acked;
      try {
        // The kill interrupted the stream: some dead letters were still to be written.
        expect(ackedBeforeKill).toBeLessThan(records.length);
        // The killed broker's pid can be gone a moment before the kernel has closed its listening socket.
        await waitFor(async () => !(await portInUse(port)), {
          what: 'the killed broker to release its port',
        });
      } finally {
        await startService('kafka');
      }
      const failedCalls = (await Promise.all(publishing)).reduce((a, b) => a + b, 0);
      rounds.push({ ackedBeforeKill, failedCalls });
    }

    const counts = idCounts(await readTopicToEnd(kafka, topics.dlq(tenant)));
    const { missing, extra, duplicates } = compare(sent, counts);
    process.stderr.write(
      `[dlq-publisher sigkill] rounds ${JSON.stringify(rounds)}; missing ${missing.length} ` +
        `${JSON.stringify(missing)}, duplicates ${duplicates}\n`,
    );
    expect(missing).toEqual([]);
    expect(extra).toEqual([]);
  });

  test('a produce response lost on the wire (the broker wrote the batch) loses no other dead letter', async () => {
    // Between the client and the real broker: when armed, the next produce request's response is swallowed
    // and the connection cut, exactly as when a broker's answer is lost after it appended the batch.
    let armed = false;
    let lost = 0;
    const lossy: ISocketFactory = ({ host, port, onConnect }) => {
      const socket = net.connect({ host, port }, onConnect);
      let produceCorrelation: number | undefined;
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = ((chunk: unknown, ...rest: unknown[]) => {
        // Request frame: int32 size, int16 api key (0 = Produce), int16 version, int32 correlation id.
        if (armed && Buffer.isBuffer(chunk) && chunk.length >= 12 && chunk.readInt16BE(4) === 0) {
          armed = false;
          produceCorrelation = chunk.readInt32BE(8);
        }
        return write(chunk, ...rest);
      }) as typeof socket.write;
      const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
      socket.emit = ((event: string | symbol, ...args: unknown[]) => {
        const data = args[0];
        // Response frame: int32 size, int32 correlation id.
        if (
          event === 'data' &&
          produceCorrelation !== undefined &&
          Buffer.isBuffer(data) &&
          data.length >= 8
        ) {
          if (data.readInt32BE(4) === produceCorrelation) {
            produceCorrelation = undefined;
            lost++;
            // As the client sees a connection reset (kafkajs fails its pending requests on 'error').
            socket.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
            return true;
          }
        }
        return emit(event, ...args);
      }) as typeof socket.emit;
      return socket;
    };
    const kafka = kafkaClient(lossy);
    const tenant = await dlqTopicFor(kafka);
    dlq = new DlqPublisher(kafka, createMetrics({ defaultMetrics: false }), logger);
    const warm = deadLetter(tenant, -1);
    await dlq.publish(warm, null);

    // The first produce request of the burst loses its answer; the other dead letters are sent around it.
    armed = true;
    const records = Array.from({ length: 150 }, (_, i) => deadLetter(tenant, i));
    await Promise.all(records.map((r) => publishUntilAcked(dlq!, tenant, r)));
    expect(lost).toBe(1);

    const counts = idCounts(await readTopicToEnd(kafka, topics.dlq(tenant)));
    const { missing, extra, duplicates } = compare([warm, ...records], counts);
    process.stderr.write(
      `[dlq-publisher lost response] missing ${missing.length}, duplicates ${duplicates}\n`,
    );
    expect(missing).toEqual([]);
    expect(extra).toEqual([]);
    // A lost answer can make its one record be written twice (recognisable by its id), nothing more.
    expect(duplicates).toBeLessThanOrEqual(lost);
  });
});
