import { type KafkaConfig, loadRelayConfig } from '../config';
import { UnreachableError } from '../errors';
import { createQuietKafka, tokenEndpointFailure } from '../kafka/client';
import { classifyKafkaError, kafkaWhere } from '../kafka/errors';
import type { KafkaAdmin, KafkaClient } from '../kafka/port';
import { type Logger, createLogger } from '../logger';
import { within } from './reach';

/**
 * First contact within the connect timeout, through a client that gives up by then (kafkajs' own budget is
 * ~10 s of retries, and a broker that accepts and never answers holds a request for 30 s). Its error keeps
 * the cause (socket code, SASL refusal) for the one line; the race is the backstop, whose cause is the OAUTHBEARER
 * token endpoint's failure when the wait was for a token it is still retrying.
 */
async function probe(cfg: KafkaConfig, logger: Logger, timeoutMs: number): Promise<void> {
  const kafka = createQuietKafka(cfg, logger, {
    connectionTimeout: Math.min(3000, timeoutMs),
    requestTimeout: timeoutMs,
    retry: { retries: 4, initialRetryTime: 200, maxRetryTime: Math.max(200, timeoutMs / 5), factor: 0 },
  });
  const admin = kafka.admin();
  try {
    await within(
      admin.connect(),
      timeoutMs,
      () =>
        tokenEndpointFailure(cfg) ??
        new UnreachableError(`${kafkaWhere(cfg)} is unreachable (no answer within ${timeoutMs} ms)`),
    );
  } finally {
    void admin.disconnect().catch(() => undefined);
  }
}

/**
 * For one-shot commands: a Kafka client and a connected admin from the environment, released afterwards.
 * Failures come out as one-line errors of the CLI's classes (unreachable, refused, not found).
 */
export async function withKafkaAdmin<T>(
  fn: (kafka: KafkaClient, admin: KafkaAdmin, logger: Logger) => Promise<T>,
): Promise<T> {
  const cfg = loadRelayConfig('cli');
  const logger = createLogger('poimen-relay', cfg.logLevel, { format: cfg.logFormat });
  let admin: KafkaAdmin | undefined;
  try {
    await probe(cfg.kafka, logger, cfg.cliConnectTimeoutMs);
    const kafka = createQuietKafka(cfg.kafka, logger);
    admin = kafka.admin();
    await admin.connect();
    const result = await fn(kafka, admin, logger);
    await admin.disconnect();
    return result;
  } catch (err) {
    // Not awaited: with the broker gone a disconnect can take as long as the retries the error ended.
    void admin?.disconnect().catch(() => undefined);
    throw classifyKafkaError(err, cfg.kafka);
  }
}
