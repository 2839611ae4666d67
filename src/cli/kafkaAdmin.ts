import type { Admin, Kafka } from 'kafkajs';
import { loadRelayConfig } from '../config';
import { createKafka } from '../kafka/client';
import { createLogger } from '../logger';

/** For one-shot commands: a Kafka client and a connected admin from the environment, released afterwards. */
export async function withKafkaAdmin<T>(fn: (kafka: Kafka, admin: Admin) => Promise<T>): Promise<T> {
  const cfg = loadRelayConfig('cli');
  const kafka = createKafka(cfg.kafka, createLogger('poimen-relay', cfg.logLevel));
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await fn(kafka, admin);
  } finally {
    await admin.disconnect();
  }
}
