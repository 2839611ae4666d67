import { Kafka, type KafkaConfig as KafkaJsConfig, logLevel, type LogEntry, type SASLOptions } from 'kafkajs';
import type { KafkaConfig } from '../config';
import type { Logger } from '../logger';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** The one place a kafkajs client is built from configuration (brokers, TLS, SASL, logging). */
export function createKafka(cfg: KafkaConfig, logger: Logger, overrides: Partial<KafkaJsConfig> = {}): Kafka {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: cfg.clientId,
    brokers: cfg.brokers,
    ssl: cfg.ssl,
    // The config union is the same shape kafkajs wants, spelled per mechanism there.
    ...(cfg.sasl ? { sasl: cfg.sasl as SASLOptions } : {}),
    // kafkajs reports broker outages at ERROR on every retry; WARN keeps them visible without flooding.
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log }: LogEntry) => {
        const { message, ...extra } = log;
        kafkaLogger[LEVELS[level] ?? 'info'](extra, message);
      },
    ...overrides,
  });
}
