import crypto from 'node:crypto';
import { Connection } from '@temporalio/client';
import { Kafka, logLevel } from 'kafkajs';
import { missingSearchAttributes } from '../temporal/searchAttributes';
import type { LocalStack } from './stack';

/** A quick end-to-end check of a running stack through the real clients: Kafka round trip, Temporal namespace. */
export async function smokeCheck(stack: LocalStack): Promise<string[]> {
  const lines: string[] = [];
  const kafka = new Kafka({
    clientId: 'poimen-smoke',
    brokers: [stack.services.kafka.address],
    logLevel: logLevel.NOTHING,
  });
  const topic = `poimen-smoke-${crypto.randomUUID()}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'k', value: 'hello' }] });
    await producer.disconnect();
    const offsets = await admin.fetchTopicOffsets(topic);
    lines.push(`kafka: produced to ${topic}, high watermark ${offsets[0]?.high ?? '?'}`);
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  }
  const connection = await Connection.connect({ address: stack.services.temporal.address });
  try {
    const missing = await missingSearchAttributes(connection, stack.cfg.namespace);
    lines.push(
      `temporal: namespace ${stack.cfg.namespace} answers; search attributes ${missing.length === 0 ? 'all registered' : `missing ${missing.join(', ')}`}`,
    );
  } finally {
    await connection.close();
  }
  return lines;
}
