/**
 * The ingester's settings: what Ingester (ingester.ts) reads of the relay's configuration, as one value, so that
 * it is handed exactly that and not the whole configuration.
 */
import type { RelayConfig } from '../config';

export type IngesterOptions = Pick<
  RelayConfig['ingest'],
  | 'maxInFlight'
  | 'maxInFlightBytes'
  | 'partitionsConcurrently'
  | 'topicRefreshMs'
  | 'lagRefreshMs'
  | 'commitEveryRecords'
  | 'dlqRefreshMs'
  | 'fetchMaxBytes'
  | 'fetchMaxBytesPerPartition'
  | 'sessionTimeoutMs'
  | 'batchSliceMs'
>;

/** What the ingester reads of the configuration: Kafka's client and group, the dispatch topics, its settings. */
export interface IngesterSettings {
  kafka: RelayConfig['kafka'];
  dispatchTopicPattern: RegExp;
  ingest: IngesterOptions;
}
