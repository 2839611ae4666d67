import fs from 'node:fs';
import { Kafka, type KafkaConfig as KafkaJsConfig, logLevel, type LogEntry, type SASLOptions } from 'kafkajs';
import type { KafkaConfig, KafkaSasl } from '../config';
import type { Logger } from '../logger';
import { registerKafkaCodecs } from './codecs';
import { attributeFetchDecodeErrors } from './fetchAttribution';
import { RepeatThrottle, repeatKey } from './logThrottle';
import { OAuthTokenProvider } from './oauthBearer';

/**
 * kafkajs's ERROR is not the relay's: kafkajs logs every failed dial and retry there, while the relay sees each
 * failure through the API and says itself what is an error (a consumer that will not restart, a refused login).
 */
const LEVELS: Record<number, 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'warn',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** How long a kafkajs message is not shown again after it was (the next one shown counts those left out). */
export const KAFKA_LOG_REPEAT_WINDOW_MS = 60_000;

/**
 * kafkajs's log entries as lines of the relay's logger, at kafkajs's level (its ERROR shown as WARN) or at one
 * level for all; each message at most once a window, the next one shown counting those left out.
 */
function logCreatorFor(logger: Logger, level?: 'debug'): KafkaJsConfig['logCreator'] {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  const throttle = new RepeatThrottle(KAFKA_LOG_REPEAT_WINDOW_MS);
  return () =>
    ({ namespace, level: entryLevel, log }: LogEntry) => {
      const { message, ...extra } = log;
      const repeated = throttle.admit(repeatKey(namespace, message));
      if (repeated === undefined) return;
      kafkaLogger[level ?? LEVELS[entryLevel] ?? 'info'](
        { ...extra, ...(repeated > 0 ? { repeated } : {}) },
        message,
      );
    };
}

/** The only `new Kafka(`: every client of the relay (and its CLI and dev stack) is made here. */
function newClient(options: KafkaJsConfig): Kafka {
  return new Kafka(options);
}

/**
 * kafkajs's `ssl` option: off, on with the system roots, or a TLS context. A configured CA replaces the system
 * roots for the brokers' certificates (KAFKA_SSL_CA); a client certificate and key (KAFKA_SSL_CERT,
 * KAFKA_SSL_KEY) are offered to brokers that authenticate clients by certificate. The files were checked at start.
 */
export function kafkaTlsOptions(cfg: KafkaConfig): KafkaJsConfig['ssl'] {
  if (!cfg.ssl) return false;
  if (!cfg.sslCaPath && !cfg.sslCertPath) return true;
  return {
    ...(cfg.sslCaPath ? { ca: [fs.readFileSync(cfg.sslCaPath)] } : {}),
    ...(cfg.sslCertPath && cfg.sslKeyPath
      ? { cert: fs.readFileSync(cfg.sslCertPath), key: fs.readFileSync(cfg.sslKeyPath) }
      : {}),
  };
}

/**
 * One token provider per configured SASL setting: every client a process makes from its configuration (the
 * ingester's, the worker's DLQ producer, a command's probe and client) shares one cached token.
 */
const tokenProviders = new WeakMap<KafkaSasl, OAuthTokenProvider>();

type OAuthSasl = Extract<KafkaSasl, { mechanism: 'oauthbearer' }>;

function tokenProviderOf(sasl: OAuthSasl): OAuthTokenProvider {
  let provider = tokenProviders.get(sasl);
  if (!provider) {
    provider = new OAuthTokenProvider(sasl.oauth);
    tokenProviders.set(sasl, provider);
  }
  return provider;
}

/** Services holding each token provider: the last to let go closes it. */
const holders = new WeakMap<OAuthTokenProvider, number>();

/**
 * A service (ingester, worker) holds its configuration's OAUTHBEARER token provider while it runs, and lets go once
 * its Kafka clients are disconnected. When the last service made from that configuration lets go, the provider's
 * grant in flight ends and its refreshes stop, so an endpoint that is down or slow does not keep the process from
 * exiting (a grant's retries take up to 30 s); another service still running keeps it. Returns the release,
 * which may be called more than once. A service made from the configuration afterwards gets a new provider.
 */
export function holdKafkaAuth(cfg: KafkaConfig): () => void {
  const sasl = cfg.sasl;
  if (sasl?.mechanism !== 'oauthbearer') return () => undefined;
  const provider = tokenProviderOf(sasl);
  holders.set(provider, (holders.get(provider) ?? 0) + 1);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    const left = (holders.get(provider) ?? 1) - 1;
    holders.set(provider, left);
    if (left > 0) return;
    provider.close();
    if (tokenProviders.get(sasl) === provider) tokenProviders.delete(sasl);
  };
}

/**
 * With OAUTHBEARER, the token endpoint's last failed attempt since it last granted a token: the cause to report
 * when a caller stops waiting for a connection (a command's connect timeout) while the grant is still retried.
 */
export function tokenEndpointFailure(cfg: KafkaConfig): Error | undefined {
  return cfg.sasl?.mechanism === 'oauthbearer' ? tokenProviderOf(cfg.sasl).lastFailure() : undefined;
}

/** kafkajs's `sasl` option: the configured user name and password, or OAUTHBEARER with the relay's token. */
export function kafkaSaslOptions(cfg: KafkaConfig): SASLOptions | undefined {
  const sasl = cfg.sasl;
  if (sasl?.mechanism !== 'oauthbearer') return sasl;
  return { mechanism: 'oauthbearer', oauthBearerProvider: tokenProviderOf(sasl).token };
}

/**
 * With OAUTHBEARER, every admin, producer and consumer makes sure of a token before it connects, so a grant that
 * fails fails the connect with the token endpoint's own one-line error, before any broker is dialled. kafkajs asks
 * for the token only midway through a connection's SASL handshake; a failure there leaves that connection's
 * handshake half done, and kafkajs's retry on it is answered ILLEGAL_SASL_STATE, which would hide the cause.
 */
function tokenFirst(kafka: Kafka, provider: OAuthTokenProvider): Kafka {
  const guard = <T extends { connect(): Promise<void> }>(client: T): T => {
    const connect = client.connect.bind(client);
    client.connect = async () => {
      await provider.token();
      await connect();
    };
    return client;
  };
  const admin = kafka.admin.bind(kafka);
  const producer = kafka.producer.bind(kafka);
  const consumer = kafka.consumer.bind(kafka);
  kafka.admin = (config) => guard(admin(config));
  kafka.producer = (config) => guard(producer(config));
  kafka.consumer = (config) => guard(consumer(config));
  return kafka;
}

/** The one place a kafkajs client is built from configuration (brokers, TLS, SASL, logging, codecs). */
export function createKafka(cfg: KafkaConfig, logger: Logger, overrides: Partial<KafkaJsConfig> = {}): Kafka {
  // Tenants' producers compress with snappy, lz4 or zstd; kafkajs alone reads only gzip.
  registerKafkaCodecs(cfg.decodedBatchMaxBytes);
  // A batch that cannot be decoded is named by its partition, which kafkajs's own error does not say.
  attributeFetchDecodeErrors();
  const client = newClient({
    clientId: cfg.clientId,
    brokers: cfg.brokers,
    ssl: kafkaTlsOptions(cfg),
    ...(cfg.sasl ? { sasl: kafkaSaslOptions(cfg) } : {}),
    // kafkajs reports broker outages at ERROR on every retry: shown at WARN, each message once per window.
    logLevel: logLevel.WARN,
    logCreator: logCreatorFor(logger),
    ...overrides,
  });
  return cfg.sasl?.mechanism === 'oauthbearer' ? tokenFirst(client, tokenProviderOf(cfg.sasl)) : client;
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
 * A client made from kafkajs's options alone, no relay config, that logs nothing: for code outside the relay
 * that has no configuration of its own to give (the dev stack's broker: devstack/kafka.ts).
 */
export function createSilentKafka(options: KafkaJsConfig): Kafka {
  return newClient({ ...options, logLevel: logLevel.NOTHING });
}
