/**
 * The relay's Kafka vocabulary: the names the rest of src/ uses for Kafka things. Only src/kafka/ imports
 * kafkajs (eslint.config.mjs holds it, `import type` included); everything else names these types and calls the
 * functions this folder exports (client.ts builds every client, errors.ts says what its errors mean, topics.ts
 * creates and describes topics, readRange.ts / dlqReader.ts / offsets.ts / dlqProgress.ts / dlqBacklog.ts
 * read, dlqPublisher.ts writes).
 *
 * Why aliases of kafkajs's own types rather than interfaces of our own: the ingester relies on the consumer's
 * exact semantics (eachBatch with resolveOffset and heartbeat, pause/resume, commitOffsets, the CRASH event's
 * `restart`), and restating them in a wrapper would be a second API to keep in step with the first. The cost is
 * that these are kafkajs's shapes and semantics, not a neutral interface: @confluentinc/kafka-javascript offers a
 * KafkaJS-compatible API (`require('@confluentinc/kafka-javascript').KafkaJS`) with much the same names, but it
 * is not a drop-in target for the ingester. Its consumer manages heartbeats in librdkafka (`heartbeat()` does not
 * report a rebalance, which the ingester's generation handling reads), caps eachBatch at a configured batch size,
 * and takes acks, fromBeginning and autoCommit when a client is made rather than per call. A move would re-point
 * these aliases and rework the ingester's batch and rebalance handling with them. The per-call options in the
 * product: subscribe's fromBeginning and run's autoCommit in ingest/ingester.ts, kafka/readRange.ts and
 * kafka/decodeProbe.ts; send's acks in kafka/dlqPublisher.ts and ops/dlq.ts. Outside it, devstack/demo.ts and
 * tools/ (chaos, bench) send with acks too, and tools/bench/baselineConsumer.ts subscribes fromBeginning.
 */
export type {
  Admin as KafkaAdmin,
  Consumer as KafkaConsumer,
  EachBatchPayload as ConsumedBatch,
  IHeaders as KafkaHeaders,
  ITopicConfig as TopicSpec,
  Kafka as KafkaClient,
  KafkaConfig as KafkaClientOptions,
  KafkaMessage as KafkaRecord,
  Producer as KafkaProducer,
} from 'kafkajs';
