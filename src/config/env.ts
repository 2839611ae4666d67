/**
 * The relay's configuration, read once at start from the environment into a typed object with units in the
 * names; a bad value throws a ConfigError whose one-line message names the variable. Each variable is read through
 * its row of the env table (vars/), which holds its name, schema and default: this file only puts the values
 * together and checks the rules between variables. The config folder is the only code that reads process.env
 * (lint enforces it).
 */
import { ConfigError } from '../errors';
import { type Role, varReader } from './envVar';
import { type Env, hostPort } from './schema';
import type { TracingConfig } from '../tracing/tracing';
import { tracingOf } from './otelEnv';
import type { LogFormat } from './logging';
import { type TemporalSettings, type TemporalTls, withTemporalEnvConfig } from './temporalEnv';
import { caProblem, certProblem, keyProblem, readClientPair } from './tls';
import { type KafkaSasl, readKafkaSasl } from './kafkaSasl';
import { INGEST } from './vars/ingest';
import { KAFKA } from './vars/kafka';
import { type LogLevel, PROCESS } from './vars/process';
import { RUNS_API } from './vars/runsApi';
import { TEMPORAL } from './vars/temporal';
import { WORKER } from './vars/worker';

export type { Env } from './schema';
export type { Role } from './envVar';
export type { KafkaSasl, OAuthClientCredentials } from './kafkaSasl';

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
    /** Dispatches this ingester keeps started and open at most, shared fairly among tenants; 0: none (admission.ts). */
    maxOpen: number;
    /** A fixed cap on one tenant's open dispatches besides its fair share; 0 for none (admission.ts). */
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
  logLevel: LogLevel;
  /** LOG_FORMAT; undefined: pretty on a terminal, else JSON (logger.ts). */
  logFormat?: LogFormat;
}

/**
 * Example Secrets ship placeholders; one applied unedited would start a relay whose every call is refused (401),
 * so a credential that is only a placeholder stops start-up. Exact matches only: real tokens may contain words.
 * The value is not echoed (it sits in a credential variable).
 */
const PLACEHOLDER = /^(replace[-_ ]?me|change[-_ ]?me|todo|fixme|placeholder|x{3,}|<[^>]*>|\$\{[^}]*\})$/i;
const CREDENTIALS = [
  RUNS_API.RUNS_API_TOKEN,
  KAFKA.KAFKA_SASL_USERNAME,
  KAFKA.KAFKA_SASL_PASSWORD,
  KAFKA.KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET,
  TEMPORAL.TEMPORAL_API_KEY,
];
function rejectPlaceholderCredentials(env: Env): void {
  for (const { name } of CREDENTIALS) {
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
  const v = varReader(env, role);
  const { KAFKA_BROKERS } = KAFKA;
  const brokers = v(KAFKA_BROKERS)
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  for (const b of brokers) {
    if (!hostPort.safeParse(b).success)
      throw new ConfigError(KAFKA_BROKERS.name, `= ${JSON.stringify(b)}: must be host:port[,host:port]`);
  }
  if (brokers.length === 0) throw new ConfigError(KAFKA_BROKERS.name, 'must list at least one host:port');

  const sasl = readKafkaSasl(v);

  // Extensions beyond contract §8 (docs/configuration.md): the CA of a TLS Kafka, and Node's own extra-CA file,
  // which Node merely warns about when unreadable.
  const kafkaSsl = v(KAFKA.KAFKA_SSL);
  const kafkaSslCa = v(KAFKA.KAFKA_SSL_CA);
  const sslOff = `is set but ${KAFKA.KAFKA_SSL.name} is false`;
  if (kafkaSslCa && kafkaSsl === false) throw new ConfigError(KAFKA.KAFKA_SSL_CA.name, sslOff);
  // A client certificate for brokers that authenticate clients by it (ssl.client.auth=required); implies TLS.
  const kafkaPair = readClientPair(env, KAFKA.KAFKA_SSL_CERT, KAFKA.KAFKA_SSL_KEY);
  if (kafkaPair && kafkaSsl === false) throw new ConfigError(KAFKA.KAFKA_SSL_CERT.name, sslOff);
  v(KAFKA.NODE_EXTRA_CA_CERTS);

  const temporalPair = readClientPair(env, TEMPORAL.TEMPORAL_TLS_CERT, TEMPORAL.TEMPORAL_TLS_KEY);
  const tlsCert = temporalPair?.certPath;
  const tlsKey = temporalPair?.keyPath;
  const tlsCa = v(TEMPORAL.TEMPORAL_TLS_CA);
  const apiKey = v(TEMPORAL.TEMPORAL_API_KEY);

  const { RETRY_INITIAL_INTERVAL_MS, RETRY_MAX_INTERVAL_MS, RETRY_MAX_DURATION_MS } = RUNS_API;
  const retry: RetryConfig = {
    initialIntervalMs: v(RETRY_INITIAL_INTERVAL_MS),
    backoff: v(RUNS_API.RETRY_BACKOFF),
    maxIntervalMs: v(RETRY_MAX_INTERVAL_MS),
    maxAttempts: v(RUNS_API.RETRY_MAX_ATTEMPTS),
    maxDurationMs: v(RETRY_MAX_DURATION_MS),
  };
  if (retry.maxIntervalMs < retry.initialIntervalMs) {
    throw new ConfigError(RETRY_MAX_INTERVAL_MS.name, `must be >= ${RETRY_INITIAL_INTERVAL_MS.name}`);
  }
  if (retry.maxDurationMs < retry.initialIntervalMs) {
    throw new ConfigError(
      RETRY_MAX_DURATION_MS.name,
      `must be >= ${RETRY_INITIAL_INTERVAL_MS.name} (a budget for one retry)`,
    );
  }

  const runsApiMaxRps = v(RUNS_API.RUNS_API_MAX_RPS);
  const token = v(RUNS_API.RUNS_API_TOKEN);
  const runsApiUrl = v(RUNS_API.RUNS_API_URL);
  const runsApiCa = v(RUNS_API.RUNS_API_CA);
  if (runsApiCa && !runsApiUrl.startsWith('https://')) {
    throw new ConfigError(
      RUNS_API.RUNS_API_CA.name,
      `is set but ${RUNS_API.RUNS_API_URL.name} is not https://`,
    );
  }
  const fetchMaxBytes = v(INGEST.POIMEN_KAFKA_FETCH_MAX_BYTES);
  const dispatchMaxBytes = v(KAFKA.DISPATCH_MAX_BYTES);
  return {
    kafka: {
      brokers,
      clientId: v(KAFKA.KAFKA_CLIENT_ID),
      groupId: v(KAFKA.KAFKA_GROUP_ID),
      // A CA or a client certificate implies TLS; KAFKA_SSL=false with either is refused above.
      ssl: kafkaSsl ?? Boolean(kafkaSslCa ?? kafkaPair),
      ...(kafkaSslCa ? { sslCaPath: kafkaSslCa } : {}),
      ...(kafkaPair ? { sslCertPath: kafkaPair.certPath, sslKeyPath: kafkaPair.keyPath } : {}),
      ...(sasl ? { sasl } : {}),
      // Four fetches' worth of bytes, or two of the largest accepted records: 32 MiB by default (contract §2).
      decodedBatchMaxBytes: Math.max(4 * fetchMaxBytes, 2 * dispatchMaxBytes),
    },
    dispatchTopicPattern: v(KAFKA.DISPATCH_TOPIC_PATTERN),
    dispatchMaxBytes,
    temporal: withTemporalEnvConfig(env, PEM_CHECKS, {
      address: v(TEMPORAL.TEMPORAL_ADDRESS),
      namespace: v(TEMPORAL.TEMPORAL_NAMESPACE),
      taskQueue: v(TEMPORAL.TEMPORAL_TASK_QUEUE),
      uiUrl: v(TEMPORAL.POIMEN_TEMPORAL_UI_URL),
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
      timeoutMs: v(RUNS_API.RUNS_API_TIMEOUT_MS),
      ...(runsApiCa ? { caPath: runsApiCa } : {}),
    },
    retry,
    ...tracingOf(env, role),
    // Tuning knobs beyond contract §8, prefixed POIMEN_ (docs/configuration.md).
    ingest: {
      maxInFlight: v(INGEST.POIMEN_INGEST_MAX_IN_FLIGHT),
      maxInFlightBytes: v(INGEST.POIMEN_INGEST_MAX_IN_FLIGHT_BYTES),
      partitionsConcurrently: v(INGEST.POIMEN_INGEST_PARTITIONS_CONCURRENTLY),
      topicRefreshMs: v(INGEST.POIMEN_TOPIC_REFRESH_MS),
      lagRefreshMs: v(INGEST.POIMEN_LAG_REFRESH_MS),
      commitEveryRecords: v(INGEST.POIMEN_INGEST_COMMIT_EVERY),
      dlqRefreshMs: v(INGEST.POIMEN_DLQ_REFRESH_MS),
      startTimeoutMs: v(INGEST.POIMEN_TEMPORAL_START_TIMEOUT_MS),
      fetchMaxBytes,
      fetchMaxBytesPerPartition: v(INGEST.POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION),
      sessionTimeoutMs: v(INGEST.POIMEN_KAFKA_SESSION_TIMEOUT_MS),
      batchSliceMs: v(INGEST.POIMEN_INGEST_BATCH_SLICE_MS),
      tenantWeights: v(INGEST.POIMEN_TENANT_WEIGHTS),
      maxOpen: v(INGEST.POIMEN_INGEST_MAX_OPEN),
      tenantMaxOpen: v(INGEST.POIMEN_INGEST_TENANT_MAX_OPEN),
      maxInputBytes: v(INGEST.POIMEN_TEMPORAL_MAX_INPUT_BYTES),
    },
    worker: {
      ...(runsApiMaxRps === undefined ? {} : { runsApiMaxRps }),
      maxConcurrentActivities: v(WORKER.POIMEN_WORKER_MAX_ACTIVITIES),
      maxConcurrentWorkflowTasks: v(WORKER.POIMEN_WORKER_MAX_WORKFLOW_TASKS),
      maxConcurrentLargeActivities: v(WORKER.POIMEN_WORKER_MAX_LARGE_ACTIVITIES),
      maxCachedWorkflows: v(WORKER.POIMEN_WORKER_MAX_CACHED_WORKFLOWS),
      httpConnections: v(WORKER.POIMEN_RUNS_API_CONNECTIONS),
      shutdownGraceMs: v(WORKER.POIMEN_WORKER_SHUTDOWN_GRACE_MS),
      breaker: {
        failures: v(WORKER.POIMEN_BREAKER_FAILURES),
        probeIntervalMs: v(WORKER.POIMEN_BREAKER_PROBE_INTERVAL_MS),
      },
    },
    metricsPort: v(PROCESS.METRICS_PORT),
    cliConnectTimeoutMs: v(PROCESS.POIMEN_CLI_CONNECT_TIMEOUT_MS),
    logLevel: v(PROCESS.LOG_LEVEL),
    logFormat: v(PROCESS.LOG_FORMAT),
  };
}
