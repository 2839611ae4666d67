/* eslint-disable max-lines -- the whole configuration read in one place, each variable beside its check */
/**
 * The relay's configuration, read once at start from the environment into a typed object with units in the
 * names; a bad value throws a ConfigError whose one-line message names the variable. The config folder is
 * the only code that reads process.env (lint enforces it).
 */
import { z } from 'zod';
import { DEFAULT_DISPATCH_TOPIC_PATTERN, DEFAULT_TASK_QUEUE } from '../contract/names';
import { ConfigError } from '../errors';
import {
  BREAKER_DEFAULTS,
  DEFAULT_METRICS_PORT,
  RETRY_DEFAULTS,
  RUNS_API_TIMEOUT_MS_DEFAULT,
} from './defaults';
import {
  type Env,
  bool,
  headerToken,
  hostPort,
  httpUrl,
  intIn,
  nonEmpty,
  port,
  positiveRate,
  read,
  regex,
  tenantWeights,
} from './schema';
import type { TracingConfig } from '../tracing/tracing';
import { tracingOf } from './otelEnv';
import { type LogFormat, logFormatSchema } from './logging';
import { type TemporalSettings, type TemporalTls, withTemporalEnvConfig } from './temporalEnv';
import { caFile, caProblem, certProblem, keyProblem, readClientPair } from './tls';
import { type KafkaSasl, readKafkaSasl } from './kafkaSasl';

export type { Env } from './schema';
export type { KafkaSasl, OAuthClientCredentials } from './kafkaSasl';

export type Role = 'ingester' | 'worker' | 'cli';

export interface KafkaConfig {
  brokers: string[];
  clientId: string;
  groupId: string;
  ssl: boolean;
  /** PEM file of the CA(s) that sign the brokers' certificates (KAFKA_SSL_CA); else the system roots. */
  sslCaPath?: string;
  /** PEM client certificate and its key, for brokers that authenticate clients by certificate (mTLS). */
  sslCertPath?: string;
  sslKeyPath?: string;
  /** SASL: a user name and password, or OAUTHBEARER with a client credentials grant (kafkaSasl.ts). */
  sasl?: KafkaSasl;
  /** The most bytes one record batch may decode to; a batch past it is held as undecodable (kafka/codecs.ts). */
  decodedBatchMaxBytes?: number;
}

/** The contract's names, and Temporal's own (temporalEnv.ts). */
export interface TemporalConfig extends TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Where operators open the Temporal Web UI (links printed by `dispatch status`). */
  uiUrl: string;
  apiKey?: string;
  tls?: TemporalTls;
}

export interface RetryConfig {
  initialIntervalMs: number;
  backoff: number;
  maxIntervalMs: number;
  /** 0: no count limit. */
  maxAttempts: number;
  /** The retry budget, from the dispatch's first scheduled attempt. */
  maxDurationMs: number;
}

export interface RelayConfig {
  kafka: KafkaConfig;
  dispatchTopicPattern: RegExp;
  dispatchMaxBytes: number;
  temporal: TemporalConfig;
  /** `caPath`: PEM file of the CA(s) trusted for an https RUNS_API_URL (RUNS_API_CA); else the system roots. */
  runsApi: { url: string; token?: string; timeoutMs: number; caPath?: string };
  retry: RetryConfig;
  /** OpenTelemetry tracing, on only when an OTLP endpoint is set (tracing/tracing.ts). */
  tracing?: TracingConfig;
  ingest: {
    /** Starts / DLQ writes in flight per process, across partitions. */
    maxInFlight: number;
    /** Record bytes in flight (parsed JSON can take twenty times its size in heap); one larger record runs alone. */
    maxInFlightBytes: number;
    partitionsConcurrently: number;
    /** kafkajs resolves a RegExp subscription once; the topic list is re-read this often. */
    topicRefreshMs: number;
    lagRefreshMs: number;
    /** Commit at least this often within a long batch, to bound redelivery after a crash. */
    commitEveryRecords: number;
    dlqRefreshMs: number;
    startTimeoutMs: number;
    /** kafkajs fetch bounds: what one fetch round may hold in memory, in total and per partition. */
    fetchMaxBytes: number;
    fetchMaxBytesPerPartition: number;
    /** How long the group waits for a silent consumer before giving its partitions to another. */
    sessionTimeoutMs: number;
    /** Largest encoded workflow input to start; larger dispatches are dead-lettered (Temporal would refuse them). */
    maxInputBytes: number;
    /** How long one partition's batch takes records before it yields to the other partitions' fetch. */
    batchSliceMs: number;
    /** Temporal fairness weight per tenant (1 for a tenant not named); each start carries its tenant's. */
    tenantWeights: Readonly<Record<string, number>>;
    /** Dispatches of one tenant this ingester keeps started and open at most; 0 for no bound (admission.ts). */
    tenantMaxOpen: number;
  };
  worker: {
    maxConcurrentActivities: number;
    maxConcurrentWorkflowTasks: number;
    /** Slots for calls whose input is over LARGE_INPUT_BYTES (their own task queue): bounds memory by bytes. */
    maxConcurrentLargeActivities: number;
    /** Sticky cache size: workflows kept in memory between their tasks instead of being replayed. */
    maxCachedWorkflows: number;
    httpConnections: number;
    shutdownGraceMs: number;
    /** RUNS_API_MAX_RPS: the task queue's activity rate limit, across all its workers; undefined: none. */
    runsApiMaxRps?: number;
    breaker: { failures: number; probeIntervalMs: number };
  };
  metricsPort: number;
  /** One-shot commands: how long Kafka or Temporal may take to answer the first call before "unreachable". */
  cliConnectTimeoutMs: number;
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /** LOG_FORMAT; undefined: pretty on a terminal, else JSON (logger.ts). */
  logFormat?: LogFormat;
}

/**
 * Example Secrets ship placeholders; one applied unedited would start a relay whose every call is refused (401),
 * so a credential that is only a placeholder stops start-up. Exact matches only: real tokens may contain words.
 * The value is not echoed (it sits in a credential variable).
 */
const PLACEHOLDER = /^(replace[-_ ]?me|change[-_ ]?me|todo|fixme|placeholder|x{3,}|<[^>]*>|\$\{[^}]*\})$/i;
function rejectPlaceholderCredentials(env: Env): void {
  for (const name of [
    'RUNS_API_TOKEN',
    'KAFKA_SASL_USERNAME',
    'KAFKA_SASL_PASSWORD',
    'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
    'TEMPORAL_API_KEY',
  ]) {
    if (PLACEHOLDER.test((env[name] ?? '').trim())) {
      throw new ConfigError(
        name,
        'is a placeholder: set the real credential (docs/operations.md#the-secret)',
      );
    }
  }
}

/** The checks of tls.ts, for the files and inline PEM of Temporal's standard settings (temporalEnv.ts). */
const PEM_CHECKS = { ca: caProblem, cert: certProblem, key: keyProblem };

export function loadRelayConfig(role: Role, env: Env = process.env): RelayConfig {
  rejectPlaceholderCredentials(env);
  const brokers = read(env, 'KAFKA_BROKERS', z.string(), '127.0.0.1:9092')
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  for (const b of brokers) {
    if (!hostPort.safeParse(b).success)
      throw new ConfigError('KAFKA_BROKERS', `= ${JSON.stringify(b)}: must be host:port[,host:port]`);
  }
  if (brokers.length === 0) throw new ConfigError('KAFKA_BROKERS', 'must list at least one host:port');

  const sasl = readKafkaSasl(env);

  // Extensions beyond contract §8 (docs/configuration.md): the CA of a TLS Kafka, and Node's own extra-CA file,
  // which Node merely warns about when unreadable.
  const kafkaSsl = read(env, 'KAFKA_SSL', bool);
  const kafkaSslCa = read(env, 'KAFKA_SSL_CA', caFile);
  if (kafkaSslCa && kafkaSsl === false)
    throw new ConfigError('KAFKA_SSL_CA', 'is set but KAFKA_SSL is false');
  // A client certificate for brokers that authenticate clients by it (ssl.client.auth=required); implies TLS.
  const kafkaPair = readClientPair(env, 'KAFKA_SSL_CERT', 'KAFKA_SSL_KEY');
  if (kafkaPair && kafkaSsl === false)
    throw new ConfigError('KAFKA_SSL_CERT', 'is set but KAFKA_SSL is false');
  read(env, 'NODE_EXTRA_CA_CERTS', caFile);

  const temporalPair = readClientPair(env, 'TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY');
  const tlsCert = temporalPair?.certPath;
  const tlsKey = temporalPair?.keyPath;
  const tlsCa = read(env, 'TEMPORAL_TLS_CA', caFile);
  const apiKey = read(env, 'TEMPORAL_API_KEY', nonEmpty);

  const retry: RetryConfig = {
    initialIntervalMs: read(
      env,
      'RETRY_INITIAL_INTERVAL_MS',
      intIn(1, 3_600_000),
      RETRY_DEFAULTS.initialIntervalMs,
    ),
    backoff: read(
      env,
      'RETRY_BACKOFF',
      z
        .string()
        .regex(/^\d+(\.\d+)?$/, 'must be a number')
        .transform(Number)
        .pipe(z.number().min(1, 'must be >= 1').max(100, 'must be <= 100')),
      RETRY_DEFAULTS.backoff,
    ),
    maxIntervalMs: read(env, 'RETRY_MAX_INTERVAL_MS', intIn(1, 86_400_000), RETRY_DEFAULTS.maxIntervalMs),
    maxAttempts: read(env, 'RETRY_MAX_ATTEMPTS', intIn(0, 100_000), RETRY_DEFAULTS.maxAttempts),
    maxDurationMs: read(
      env,
      'RETRY_MAX_DURATION_MS',
      intIn(1_000, 30 * 86_400_000),
      RETRY_DEFAULTS.maxDurationMs,
    ),
  };
  if (retry.maxIntervalMs < retry.initialIntervalMs) {
    throw new ConfigError('RETRY_MAX_INTERVAL_MS', 'must be >= RETRY_INITIAL_INTERVAL_MS');
  }
  if (retry.maxDurationMs < retry.initialIntervalMs) {
    throw new ConfigError(
      'RETRY_MAX_DURATION_MS',
      'must be >= RETRY_INITIAL_INTERVAL_MS (a budget for one retry)',
    );
  }

  const runsApiMaxRps = read(env, 'RUNS_API_MAX_RPS', positiveRate);
  const token = read(env, 'RUNS_API_TOKEN', headerToken);
  const runsApiUrl = read(env, 'RUNS_API_URL', httpUrl, 'http://127.0.0.1:8080');
  const runsApiCa = read(env, 'RUNS_API_CA', caFile);
  if (runsApiCa && !runsApiUrl.startsWith('https://')) {
    throw new ConfigError('RUNS_API_CA', 'is set but RUNS_API_URL is not https://');
  }
  const fetchMaxBytes = read(env, 'POIMEN_KAFKA_FETCH_MAX_BYTES', intIn(1024, 1024 ** 3), 8 * 1024 * 1024);
  const dispatchMaxBytes = read(env, 'DISPATCH_MAX_BYTES', intIn(1, 100 * 1024 * 1024), 1024 * 1024);
  return {
    kafka: {
      brokers,
      clientId: read(env, 'KAFKA_CLIENT_ID', nonEmpty, `poimen-relay-${role}`),
      groupId: read(env, 'KAFKA_GROUP_ID', nonEmpty, 'poimen-inbox-relay'),
      // A CA or a client certificate implies TLS; KAFKA_SSL=false with either is refused above.
      ssl: kafkaSsl ?? Boolean(kafkaSslCa ?? kafkaPair),
      ...(kafkaSslCa ? { sslCaPath: kafkaSslCa } : {}),
      ...(kafkaPair ? { sslCertPath: kafkaPair.certPath, sslKeyPath: kafkaPair.keyPath } : {}),
      ...(sasl ? { sasl } : {}),
      // Four fetches' worth of bytes, or two of the largest accepted records: 32 MiB by default (contract §2).
      decodedBatchMaxBytes: Math.max(4 * fetchMaxBytes, 2 * dispatchMaxBytes),
    },
    dispatchTopicPattern: read(
      env,
      'DISPATCH_TOPIC_PATTERN',
      regex,
      new RegExp(DEFAULT_DISPATCH_TOPIC_PATTERN),
    ),
    dispatchMaxBytes,
    temporal: withTemporalEnvConfig(env, PEM_CHECKS, {
      address: read(env, 'TEMPORAL_ADDRESS', hostPort, '127.0.0.1:7233'),
      namespace: read(env, 'TEMPORAL_NAMESPACE', nonEmpty, 'default'),
      taskQueue: read(env, 'TEMPORAL_TASK_QUEUE', nonEmpty, DEFAULT_TASK_QUEUE),
      uiUrl: read(env, 'POIMEN_TEMPORAL_UI_URL', httpUrl, 'http://127.0.0.1:8233'),
      ...(apiKey ? { apiKey } : {}),
      ...(tlsCert || tlsCa
        ? {
            tls: {
              ...(tlsCert ? { certPath: tlsCert } : {}),
              ...(tlsKey ? { keyPath: tlsKey } : {}),
              ...(tlsCa ? { caPath: tlsCa } : {}),
            },
          }
        : {}),
    }),
    runsApi: {
      url: runsApiUrl,
      ...(token ? { token } : {}),
      timeoutMs: read(env, 'RUNS_API_TIMEOUT_MS', intIn(1, 600_000), RUNS_API_TIMEOUT_MS_DEFAULT),
      ...(runsApiCa ? { caPath: runsApiCa } : {}),
    },
    retry,
    ...tracingOf(env, role),
    // Tuning knobs beyond contract §8, prefixed POIMEN_ (docs/configuration.md).
    ingest: {
      maxInFlight: read(env, 'POIMEN_INGEST_MAX_IN_FLIGHT', intIn(1, 10_000), 16),
      maxInFlightBytes: read(env, 'POIMEN_INGEST_MAX_IN_FLIGHT_BYTES', intIn(1024, 1024 ** 3), 1024 * 1024),
      partitionsConcurrently: read(env, 'POIMEN_INGEST_PARTITIONS_CONCURRENTLY', intIn(1, 1000), 4),
      topicRefreshMs: read(env, 'POIMEN_TOPIC_REFRESH_MS', intIn(100, 3_600_000), 10_000),
      lagRefreshMs: read(env, 'POIMEN_LAG_REFRESH_MS', intIn(100, 3_600_000), 5_000),
      commitEveryRecords: read(env, 'POIMEN_INGEST_COMMIT_EVERY', intIn(1, 1_000_000), 200),
      dlqRefreshMs: read(env, 'POIMEN_DLQ_REFRESH_MS', intIn(100, 3_600_000), 30_000),
      startTimeoutMs: read(env, 'POIMEN_TEMPORAL_START_TIMEOUT_MS', intIn(100, 600_000), 10_000),
      fetchMaxBytes,
      fetchMaxBytesPerPartition: read(
        env,
        'POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION',
        intIn(1024, 1024 ** 3),
        1024 * 1024,
      ),
      sessionTimeoutMs: read(env, 'POIMEN_KAFKA_SESSION_TIMEOUT_MS', intIn(6_000, 300_000), 30_000),
      batchSliceMs: read(env, 'POIMEN_INGEST_BATCH_SLICE_MS', intIn(10, 600_000), 500),
      tenantWeights: read(env, 'POIMEN_TENANT_WEIGHTS', tenantWeights, {}),
      tenantMaxOpen: read(env, 'POIMEN_INGEST_TENANT_MAX_OPEN', intIn(0, 1_000_000), 0),
      // Temporal's default blob size limit is 2 MiB; the rest of the input (source, policy) is small.
      maxInputBytes: read(
        env,
        'POIMEN_TEMPORAL_MAX_INPUT_BYTES',
        intIn(1024, 1024 ** 3),
        2 * 1024 * 1024 - 64 * 1024,
      ),
    },
    worker: {
      ...(runsApiMaxRps === undefined ? {} : { runsApiMaxRps }),
      maxConcurrentActivities: read(env, 'POIMEN_WORKER_MAX_ACTIVITIES', intIn(1, 10_000), 100),
      maxConcurrentWorkflowTasks: read(env, 'POIMEN_WORKER_MAX_WORKFLOW_TASKS', intIn(1, 10_000), 20),
      maxConcurrentLargeActivities: read(env, 'POIMEN_WORKER_MAX_LARGE_ACTIVITIES', intIn(1, 10_000), 8),
      maxCachedWorkflows: read(env, 'POIMEN_WORKER_MAX_CACHED_WORKFLOWS', intIn(0, 100_000), 1000),
      httpConnections: read(env, 'POIMEN_RUNS_API_CONNECTIONS', intIn(1, 10_000), 64),
      shutdownGraceMs: read(env, 'POIMEN_WORKER_SHUTDOWN_GRACE_MS', intIn(0, 3_600_000), 30_000),
      breaker: {
        failures: read(env, 'POIMEN_BREAKER_FAILURES', intIn(1, 10_000), BREAKER_DEFAULTS.failures),
        probeIntervalMs: read(
          env,
          'POIMEN_BREAKER_PROBE_INTERVAL_MS',
          intIn(100, 3_600_000),
          BREAKER_DEFAULTS.probeIntervalMs,
        ),
      },
    },
    metricsPort: read(env, 'METRICS_PORT', port, DEFAULT_METRICS_PORT[role]),
    cliConnectTimeoutMs: read(env, 'POIMEN_CLI_CONNECT_TIMEOUT_MS', intIn(100, 600_000), 5_000),
    logLevel: read(
      env,
      'LOG_LEVEL',
      z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], {
        message: 'must be one of trace, debug, info, warn, error, fatal, silent',
      }),
      'info',
    ),
    logFormat: read(env, 'LOG_FORMAT', logFormatSchema),
  };
}
