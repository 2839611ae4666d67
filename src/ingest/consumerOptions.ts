/**
 * The kafkajs consumer the ingester runs (ingester.ts): its group, how much one fetch may bring, how long the
 * group waits for a member gone silent, and how long a fetch waits for news.
 */
import type { KafkaClient } from '../kafka/port';
import type { RelayConfig } from '../config';

/**
 * How long a fetch waits for news. A batch that hands its turn back keeps its partition paused until it is done
 * (keptBatches.ts), and with admission a tenant's partitions pause for room; with every partition of a broker
 * paused, kafkajs sleeps this long before it fetches again, so a resume waits up to this long. kafkajs's default,
 * 5 s, held a lone tenant's resumes back that long (docs/design.md, "Fair turns for tenants"); the price is four
 * empty fetches a second per broker while nothing arrives.
 */
const FETCH_WAIT_MS = 250;

export function consumerOptions(
  groupId: string,
  opts: Pick<RelayConfig['ingest'], 'fetchMaxBytes' | 'fetchMaxBytesPerPartition' | 'sessionTimeoutMs'>,
): Parameters<KafkaClient['consumer']>[0] {
  return {
    groupId,
    allowAutoTopicCreation: false,
    // Bounded memory: at most this much fetched per partition per round (kafkajs #526).
    maxBytesPerPartition: opts.fetchMaxBytesPerPartition,
    maxBytes: opts.fetchMaxBytes,
    // A crashed ingester's partitions wait this long for a new owner; heartbeats at a tenth of it.
    sessionTimeout: opts.sessionTimeoutMs,
    heartbeatInterval: Math.max(1000, Math.floor(opts.sessionTimeoutMs / 10)),
    retry: { retries: 10 },
    maxWaitTimeInMs: FETCH_WAIT_MS,
  };
}
