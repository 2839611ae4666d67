/**
 * The tests' own side of a dedicated broker with secured listeners (tlsServices.ts, authKafka.ts): a kafkajs client
 * on its PLAINTEXT listener with a connected admin and producer, and a Temporal client on the suite's stack, to make
 * topics, publish records and look at executions while the relay talks to the secured listener.
 */
import { Client, Connection } from '@temporalio/client';
import { type Admin, Kafka, logLevel, type Producer } from 'kafkajs';
import { testServices } from './testEnv';

export interface Tooling {
  plain: Kafka;
  admin: Admin;
  producer: Producer;
  connection: Connection;
  client: Client;
}

export async function connectTooling(clientId: string, plainBrokers: string): Promise<Tooling> {
  const plain = new Kafka({ clientId, brokers: [plainBrokers], logLevel: logLevel.NOTHING });
  const admin = plain.admin();
  await admin.connect();
  const producer = plain.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const connection = await Connection.connect({ address: testServices().temporalAddress });
  const client = new Client({ connection, namespace: testServices().namespace });
  return { plain, admin, producer, connection, client };
}

/** Closes what connectTooling opened (whatever part of it a failed setup got to), never throwing. */
export async function closeTooling(t: Partial<Tooling>): Promise<void> {
  await t.producer?.disconnect().catch(() => undefined);
  await t.admin?.disconnect().catch(() => undefined);
  await t.connection?.close().catch(() => undefined);
}
