import fs from 'node:fs';
import { Kafka, type KafkaConfig as KafkaJsConfig, logLevel, type LogEntry, type SASLOptions } from 'kafkajs';
import type { KafkaConfig } from '../config';
import type { Logger } from '../logger';
import { handshakeFailure, tlsRefusal } from '../tlsErrors';
import { registerKafkaCodecs } from './codecs';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** The one place a kafkajs client is built from configuration (brokers, TLS, SASL, logging, codecs). */
export function createKafka(cfg: KafkaConfig, logger: Logger, overrides: Partial<KafkaJsConfig> = {}): Kafka {
  // Tenants' producers compress with snappy, lz4 or zstd; kafkajs alone reads only gzip.
  registerKafkaCodecs();
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: cfg.clientId,
    brokers: cfg.brokers,
    // A configured CA replaces the system roots for the brokers' certificates (KAFKA_SSL_CA).
    ssl: cfg.ssl && cfg.sslCaPath ? { ca: [fs.readFileSync(cfg.sslCaPath)] } : cfg.ssl,
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

/**
 * When Kafka refused this client's credentials or the client refused the brokers' certificate, the one-line
 * reason naming the variables to fix; undefined for anything that waiting may cure (broker down, network).
 * Decided by error class and code (kafkajs keeps the socket's `code` on its connection errors), never by
 * message text. No secret goes into the reason.
 */
export function kafkaAccessProblem(
  err: unknown,
  cfg: KafkaConfig,
): { variable: string; reason: string } | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    const { name, code, type } = e as { name?: unknown; code?: unknown; type?: unknown };
    if (name === 'KafkaJSSASLAuthenticationError' || type === 'SASL_AUTHENTICATION_FAILED') {
      const who = cfg.sasl ? `${cfg.sasl.mechanism} user ${JSON.stringify(cfg.sasl.username)}` : 'SASL';
      return {
        variable: 'KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD',
        reason: `were rejected by Kafka at ${cfg.brokers.join(',')} (${who}: authentication failed)`,
      };
    }
    const refusal = name === 'KafkaJSConnectionError' && cfg.ssl ? tlsRefusal(code) : undefined;
    if (refusal !== undefined) {
      const where = `Kafka at ${cfg.brokers.join(',')}`;
      const detail = String(code);
      if (refusal === 'untrusted-server') {
        return cfg.sslCaPath
          ? { variable: 'KAFKA_SSL_CA', reason: `does not fit ${where}: TLS handshake failed (${detail})` }
          : {
              variable: 'KAFKA_SSL',
              reason: `= true but the TLS handshake with ${where} failed (${detail})`,
            };
      }
      // The CA is not in question here: the brokers refused us (they want a client certificate, which this
      // relay does not offer), or the two ends share no TLS version or cipher, or the port does not speak TLS.
      // TLS is on because KAFKA_SSL is true or KAFKA_SSL_CA implies it.
      return {
        variable: 'KAFKA_SSL',
        reason:
          refusal === 'refused-by-server'
            ? `is on but ${where} wants a client certificate, which the relay does not offer (${detail})`
            : `is on but with ${where}: ${handshakeFailure(code)}`,
      };
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
