/**
 * The relay's Kafka vocabulary: the names the rest of src/ uses for Kafka things. Only src/kafka/ imports
 * kafkajs (eslint.config.mjs holds it, `import type` included); everything else names these types and calls the
 * functions this folder exports (client.ts builds every client, errors.ts says what its errors mean, topics.ts
 * creates and describes topics, readRange.ts / dlqReader.ts / offsets.ts read, dlqPublisher.ts writes).
 *
 * Why aliases of kafkajs's own types rather than interfaces of our own: the ingester relies on the consumer's
 * exact semantics (eachBatch with resolveOffset and heartbeat, pause/resume, commitOffsets, the CRASH event's
 * `restart`), and restating them in a wrapper would be a second API to keep in step with the first. The client
 * a later move would go to, @confluentinc/kafka-javascript, offers a KafkaJS-compatible API
 * (`require('@confluentinc/kafka-javascript').KafkaJS`) with these same shapes (Kafka, Admin, Consumer,
 * Producer, EachBatchPayload, KafkaMessage, ITopicConfig), so the aliases can point there instead. What differs
 * there is mostly configuration (a `kafkaJS` block; acks, fromBeginning and autoCommit set when a producer or
 * consumer is made, not per call; errors told apart by `code`), and the client-building, error-classifying and
 * codec code that meets those differences is in this folder. Call sites outside it that pass per-call options
 * the other client takes at creation: ingest/ingester.ts (run autoCommit), ops/dlq.ts (send acks).
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
