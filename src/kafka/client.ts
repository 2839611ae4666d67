import fs from 'node:fs';
import { Kafka, type KafkaConfig as KafkaJsConfig, logLevel, type LogEntry, type SASLOptions } from 'kafkajs';
import type { KafkaConfig } from '../config';
import type { Logger } from '../logger';
import { registerKafkaCodecs } from './codecs';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** kafkajs's log entries as lines of the relay's logger, at kafkajs's level or at one level for all. */
function logCreatorFor(logger: Logger, level?: 'debug'): KafkaJsConfig['logCreator'] {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return () =>
    ({ level: entryLevel, log }: LogEntry) => {
      const { message, ...extra } = log;
      kafkaLogger[level ?? LEVELS[entryLevel] ?? 'info'](extra, message);
    };
}

/** The only `new Kafka(`: every client of the relay (and its CLI and dev stack) is made here. */
function newClient(options: KafkaJsConfig): Kafka {
  return new Kafka(options);
}

/** The one place a kafkajs client is built from configuration (brokers, TLS, SASL, logging, codecs). */
export function createKafka(cfg: KafkaConfig, logger: Logger, overrides: Partial<KafkaJsConfig> = {}): Kafka {
  // Tenants' producers compress with snappy, lz4 or zstd; kafkajs alone reads only gzip.
  registerKafkaCodecs();
  return newClient({
    clientId: cfg.clientId,
    brokers: cfg.brokers,
    // A configured CA replaces the system roots for the brokers' certificates (KAFKA_SSL_CA).
    ssl: cfg.ssl && cfg.sslCaPath ? { ca: [fs.readFileSync(cfg.sslCaPath)] } : cfg.ssl,
    // The config union is the same shape kafkajs wants, spelled per mechanism there.
    ...(cfg.sasl ? { sasl: cfg.sasl as SASLOptions } : {}),
    // kafkajs reports broker outages at ERROR on every retry; WARN keeps them visible without flooding.
    logLevel: logLevel.WARN,
    logCreator: logCreatorFor(logger),
    ...overrides,
  });
}

/**
 * For one-shot CLI commands: kafkajs logs every retry at ERROR; a one-shot command prints one line of its own
 * instead, so its client's logs are debug (LOG_LEVEL=debug shows them).
 */
export function createQuietKafka(
  cfg: KafkaConfig,
  logger: Logger,
  overrides: Partial<KafkaJsConfig> = {},
): Kafka {
  return createKafka(cfg, logger, {
    logLevel: logLevel.INFO,
    logCreator: logCreatorFor(logger, 'debug'),
    ...overrides,
  });
}

/**
 * A client of the local dev stack's broker (readiness probe, demo): plaintext, silent, no relay config. With
 * `probe`, one short try, so a readiness check answers within about a second.
 */
export function createLocalKafka(clientId: string, brokers: string[], opts: { probe?: boolean } = {}): Kafka {
  return newClient({
    clientId,
    brokers,
    logLevel: logLevel.NOTHING,
    ...(opts.probe ? { connectionTimeout: 1000, retry: { retries: 0 } } : {}),
  });
}
