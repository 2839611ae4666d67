/**
 * A kafkajs stand-in for the DLQ publisher's unit tests (test/unit/dlqPublisher*.test.ts): its producer's `send`
 * answers from a script and records what it was asked; a dead letter to publish, and the publisher on the stand-in.
 */
import { type ITopicConfig, type Kafka, KafkaJSConnectionError, type ProducerConfig } from 'kafkajs';
import { type DlqRecord, buildDlqRecord } from '../../src/contract';
import { DlqPublisher } from '../../src/kafka/dlqPublisher';
import { createLogger } from '../../src/logger';
import { createMetrics } from '../../src/metrics';

export type Outcome = 'ok' | Error | Promise<void>;

/**
 * A kafkajs stand-in whose `send` answers from a script, and records what it was asked. Its cluster (broker
 * count, existing topics, topics created) can be set before the first publish.
 */
export function scriptedKafka(...script: Outcome[]) {
  const sent: string[] = [];
  const acks: (number | undefined)[] = [];
  const producerConfigs: ProducerConfig[] = [];
  const cluster = { brokers: 1, topics: [record('x').topic], created: [] as ITopicConfig[] };
  const kafka = {
    producer: (config: ProducerConfig) => {
      producerConfigs.push(config);
      return {
        connect: async () => undefined,
        disconnect: async () => undefined,
        send: async ({ messages, ...rest }: { messages: { value: string }[]; acks?: number }) => {
          sent.push(JSON.parse(messages[0]!.value).id as string);
          acks.push(rest.acks);
          const next = script.shift() ?? 'ok';
          if (next instanceof Error) throw next;
          if (next !== 'ok') await next;
          return [];
        },
      };
    },
    admin: () => ({
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => [...cluster.topics, ...cluster.created.map((t) => t.topic)],
      describeCluster: async () => ({
        brokers: Array.from({ length: cluster.brokers }, (_, i) => ({ nodeId: i + 1 })),
      }),
      createTopics: async ({ topics }: { topics: ITopicConfig[] }) => {
        cluster.created.push(...topics);
        return true;
      },
    }),
  } as unknown as Kafka;
  return { kafka, sent, acks, producerConfigs, cluster };
}

export function record(key: string): DlqRecord {
  return buildDlqRecord({
    id: `id-${key}`,
    timestamp: 0,
    type: 'dispatch_failure',
    tenant: 'acme',
    dispatchKey: key,
    error: 'HTTP 422',
    source: { topic: 'poimen.acme.dispatch', partition: 0, offset: '1', timestamp: '0' },
    value: '{}',
  });
}

export function publisher(kafka: Kafka) {
  const metrics = createMetrics({ defaultMetrics: false });
  return { dlq: new DlqPublisher(kafka, metrics, createLogger('unit', 'silent')), metrics };
}

/** A send that stays on the wire until `land()` is called. */
export function pendingSend() {
  let land!: () => void;
  const answered = new Promise<void>((resolve) => (land = resolve));
  return { answered, land };
}

export const connectionLost = () => new KafkaJSConnectionError('Connection error: connect ECONNREFUSED');
