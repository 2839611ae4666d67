/**
 * The kafkajs consumer the ingester runs (ingester.ts): its group, how much one fetch may bring, how long the
 * group waits for a member gone silent, and how long a fetch waits for news.
 */
import type { KafkaClient } from '../kafka/port';
import type { RelayConfig } from '../config';

/** How long a fetch waits for news while admission per tenant is on (docs/design.md, "Fair turns for tenants"). */
const ADMISSION_FETCH_WAIT_MS = 250;

export function consumerOptions(
  groupId: string,
  opts: Pick<RelayConfig['ingest'], 'fetchMaxBytes' | 'fetchMaxBytesPerPartition' | 'sessionTimeoutMs'>,
  /** Whether admission per tenant bounds the tenants' open dispatches (admission.ts). */
  admissionBounded: boolean,
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
    // With admission on, a tenant's partitions pause for room and resume when one of its dispatches closes; a
    // fetch that waits kafkajs's default 5 s for the other partitions' news would hold that resume back as long.
    ...(admissionBounded ? { maxWaitTimeInMs: ADMISSION_FETCH_WAIT_MS } : {}),
  };
}
