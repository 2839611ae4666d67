/**
 * Clients of the local stack's broker (its readiness probe, the demo): plaintext, silent, no relay config. Made
 * through the product's Kafka port (kafkajs is named only under src/kafka/).
 */
import { createSilentKafka } from 'poimen-relay/internal/kafka/client';
import type { KafkaClient } from 'poimen-relay/internal/kafka/port';

/**
 * With `probe`, one short try, so a readiness check answers within about two seconds, also from a broker that
 * takes connections but answers nothing (frozen, or restarting: it listens while it loads its logs, and serves
 * requests only once they are loaded), where kafkajs's default request timeout would hold it 30 s.
 */
export function createLocalKafka(
  clientId: string,
  brokers: string[],
  opts: { probe?: boolean } = {},
): KafkaClient {
  return createSilentKafka({
    clientId,
    brokers,
    ...(opts.probe ? { connectionTimeout: 1000, requestTimeout: 2000, retry: { retries: 0 } } : {}),
  });
}
