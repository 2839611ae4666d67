/* eslint-disable max-lines -- one row per environment variable: the table is the single list of them */
/**
 * Every environment variable the config module reads, once: its one-line meaning, which commands it affects
 * and whether a flag may stand for it. `--help` lists and the override flags are generated from this table, and
 * test/unit/envTable.test.ts keeps it equal to what the loaders actually read. Defaults stay with the loaders
 * (docs/configuration.md lists them). Past 300 lines because it is one table, a row per variable: split, it would
 * no longer be the one list `--help` and the test read.
 */

/** Who reads a variable: the two processes, the one-shot commands by the service they talk to. */
export type EnvReader = 'ingest' | 'worker' | 'kafka-cli' | 'temporal-cli';

export interface EnvVar {
  name: string;
  description: string;
  readBy: readonly EnvReader[];
  /**
   * Present: the commands that read it also take `flagOf(name) <flagArg>`, which wins over the variable. Never
   * for secrets or certificate paths: a command line shows up in `ps` and shell history.
   */
  flagArg?: string;
  /**
   * Where Kafka or Temporal is and how to reach and authenticate to it (address, TLS, credentials): the same for
   * every process and command of a deployment, unlike the settings of how the relay behaves.
   */
  connection?: true;
}

const RELAY: readonly EnvReader[] = ['ingest', 'worker'];
const KAFKA_USERS: readonly EnvReader[] = ['ingest', 'worker', 'kafka-cli'];
const TEMPORAL_USERS: readonly EnvReader[] = ['ingest', 'worker', 'temporal-cli'];

export const ENV_VARS: readonly EnvVar[] = [
  {
    name: 'KAFKA_BROKERS',
    description: 'Kafka bootstrap brokers, host:port[,host:port]',
    readBy: KAFKA_USERS,
    connection: true,
    flagArg: '<host:port,...>',
  },
  { name: 'KAFKA_CLIENT_ID', description: 'Kafka client id', readBy: KAFKA_USERS, connection: true },
  {
    name: 'KAFKA_GROUP_ID',
    description: "the ingester's consumer group",
    readBy: ['ingest'],
    flagArg: '<group>',
  },
  {
    name: 'KAFKA_SSL',
    description: 'TLS to the brokers (true/false)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SSL_CA',
    description: "PEM file of the CA(s) of the brokers' certificates",
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SSL_CERT',
    description: 'PEM client certificate for brokers that require one (mTLS), with KAFKA_SSL_KEY',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SSL_KEY',
    description: 'PEM private key of KAFKA_SSL_CERT (unencrypted)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_MECHANISM',
    description:
      'plain, scram-sha-256, scram-sha-512 (user name, password) or oauthbearer (client credentials)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  { name: 'KAFKA_SASL_USERNAME', description: 'SASL user name', readBy: KAFKA_USERS, connection: true },
  {
    name: 'KAFKA_SASL_PASSWORD',
    description: 'SASL password (never logged)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL',
    description: "OAuth 2.0 token endpoint the relay's client credentials grant is POSTed to",
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_OAUTHBEARER_CLIENT_ID',
    description: 'OAuth client id of the client credentials grant',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET',
    description: 'OAuth client secret of the client credentials grant (never logged)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_OAUTHBEARER_CLIENT_AUTH',
    description: 'client_secret_basic (HTTP Basic, the default) or client_secret_post (in the form)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_OAUTHBEARER_SCOPE',
    description: 'scopes asked for in the grant, space-separated (unset: not sent)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'KAFKA_SASL_OAUTHBEARER_AUDIENCE',
    description: 'audience form parameter of the grant, for providers that want one (unset: not sent)',
    readBy: KAFKA_USERS,
    connection: true,
  },
  {
    name: 'NODE_EXTRA_CA_CERTS',
    description: "Node's extra trusted CA file, checked at start",
    readBy: [...KAFKA_USERS, 'temporal-cli'],
    connection: true,
  },
  {
    name: 'DISPATCH_TOPIC_PATTERN',
    description: 'regular expression of the dispatch topics to drain',
    readBy: ['ingest'],
    flagArg: '<regex>',
  },
  {
    name: 'DISPATCH_MAX_BYTES',
    description: 'larger dispatch records are dead-lettered',
    readBy: ['ingest'],
  },
  {
    name: 'TEMPORAL_ADDRESS',
    description: 'Temporal frontend, host:port',
    readBy: TEMPORAL_USERS,
    connection: true,
    flagArg: '<host:port>',
  },
  {
    name: 'TEMPORAL_NAMESPACE',
    description: 'Temporal namespace',
    readBy: TEMPORAL_USERS,
    connection: true,
    flagArg: '<namespace>',
  },
  {
    name: 'TEMPORAL_TASK_QUEUE',
    description: 'task queue of the dispatch workflows',
    readBy: RELAY,
    flagArg: '<queue>',
  },
  {
    name: 'TEMPORAL_API_KEY',
    description: 'API key sent as a bearer token; implies TLS (never logged)',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_CERT',
    description: 'PEM client certificate (mTLS), with TEMPORAL_TLS_KEY',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_KEY',
    description: 'PEM private key of TEMPORAL_TLS_CERT',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_CA',
    description: "PEM CA(s) of the frontend's certificate",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_API_KEY_FILE',
    description: 'API key read from this file and re-read on rotation, without a restart',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_CONFIG_FILE',
    description: "Temporal's TOML client config file (default ~/.config/temporalio/temporal.toml)",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_PROFILE',
    description: 'the profile of that file to use (default: default)',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS',
    description: 'true: TLS with the system roots; false: no TLS',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
    description: 'refused when true: the TypeScript SDK cannot skip the check',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
    description: "Temporal's name for the client certificate (also _DATA inline); read by the SDK",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_CLIENT_CERT_DATA',
    description: 'the client certificate, inline PEM; read by the SDK',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
    description: "Temporal's name for the client key (also _DATA inline); read by the SDK",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_CLIENT_KEY_DATA',
    description: 'the client key, inline PEM; read by the SDK',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    description: "Temporal's name for the server's CA (also _DATA inline); read by the SDK",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
    description: "the server's CA, inline PEM; read by the SDK",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_TLS_SERVER_NAME',
    description: "the name the server's certificate is checked against; read by the SDK",
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'TEMPORAL_GRPC_META_<NAME>',
    description: 'gRPC metadata header <name> (underscores as dashes) on every call',
    readBy: TEMPORAL_USERS,
    connection: true,
  },
  {
    name: 'POIMEN_TEMPORAL_UI_URL',
    description: 'Temporal Web UI base URL, for the links `dispatch status` prints',
    readBy: ['temporal-cli'],
  },
  {
    name: 'RUNS_API_URL',
    description: 'runs API base URL; the relay POSTs to /v1/runs',
    readBy: ['worker'],
    flagArg: '<url>',
  },
  { name: 'RUNS_API_TOKEN', description: 'bearer token for the runs API (never logged)', readBy: ['worker'] },
  { name: 'RUNS_API_CA', description: "PEM CA(s) of an https runs API's certificate", readBy: ['worker'] },
  {
    name: 'RUNS_API_TIMEOUT_MS',
    description: 'timeout of one runs API call; travels in each workflow input',
    readBy: ['ingest'],
  },
  {
    name: 'RETRY_INITIAL_INTERVAL_MS',
    description: 'first retry interval of a runs API call',
    readBy: ['ingest'],
  },
  { name: 'RETRY_BACKOFF', description: 'retry interval multiplier', readBy: ['ingest'] },
  { name: 'RETRY_MAX_INTERVAL_MS', description: 'longest retry interval', readBy: ['ingest'] },
  {
    name: 'RETRY_MAX_ATTEMPTS',
    description: 'attempts cap before a dispatch is dead-lettered (0: none, the default)',
    readBy: ['ingest'],
  },
  {
    name: 'RETRY_MAX_DURATION_MS',
    description: "retry budget from a dispatch's first attempt (default 24 h)",
    readBy: ['ingest'],
  },
  {
    name: 'RUNS_API_MAX_RPS',
    description: 'runs API calls per second across all workers of the task queue (unset: no cap)',
    readBy: ['worker'],
  },
  {
    name: 'METRICS_PORT',
    description: 'port of /metrics, /healthz and /readyz',
    readBy: RELAY,
    flagArg: '<port>',
  },
  {
    name: 'LOG_FORMAT',
    description: 'json or pretty; unset: pretty when stderr is a terminal, else JSON',
    readBy: [...RELAY, 'kafka-cli'],
  },
  {
    name: 'LOG_LEVEL',
    description: 'trace, debug, info, warn, error, fatal or silent',
    readBy: [...RELAY, 'kafka-cli'],
    flagArg: '<level>',
  },
  {
    name: 'POIMEN_INGEST_MAX_IN_FLIGHT',
    description: 'workflow starts / DLQ writes in flight',
    readBy: ['ingest'],
  },
  { name: 'POIMEN_INGEST_MAX_IN_FLIGHT_BYTES', description: 'record bytes in flight', readBy: ['ingest'] },
  {
    name: 'POIMEN_INGEST_BATCH_SLICE_MS',
    description: "how long one partition's batch runs before the others get their turn",
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_TENANT_WEIGHTS',
    description: "tenants' fairness weights in Temporal, tenant=weight,... (1 if unnamed)",
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_INGEST_TENANT_MAX_OPEN',
    description: "a tenant's started, still-open dispatches per ingester at most (0: no bound)",
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_INGEST_PARTITIONS_CONCURRENTLY',
    description: 'partitions consumed at the same time',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_INGEST_COMMIT_EVERY',
    description: 'commit at least every N records of a batch',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_TOPIC_REFRESH_MS',
    description: 'how often new dispatch topics are looked for',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_LAG_REFRESH_MS',
    description: 'how often poimen_inbox_lag is recomputed',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_DLQ_REFRESH_MS',
    description: 'how often the DLQ backlog gauges are recomputed',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_TEMPORAL_START_TIMEOUT_MS',
    description: 'deadline of one workflow start before it is retried',
    readBy: ['ingest'],
  },
  { name: 'POIMEN_KAFKA_FETCH_MAX_BYTES', description: 'bytes one fetch round may hold', readBy: ['ingest'] },
  {
    name: 'POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION',
    description: 'bytes one fetch round may hold per partition',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_KAFKA_SESSION_TIMEOUT_MS',
    description: "how long the group waits for a silent ingester's partitions",
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_TEMPORAL_MAX_INPUT_BYTES',
    description: 'largest workflow input started; larger dispatches are dead-lettered',
    readBy: ['ingest'],
  },
  {
    name: 'POIMEN_WORKER_MAX_ACTIVITIES',
    description: 'concurrent runs API calls (inputs up to 32 KiB)',
    readBy: ['worker'],
  },
  { name: 'POIMEN_WORKER_MAX_WORKFLOW_TASKS', description: 'concurrent workflow tasks', readBy: ['worker'] },
  {
    name: 'POIMEN_WORKER_MAX_LARGE_ACTIVITIES',
    description: 'concurrent runs API calls with inputs over 32 KiB',
    readBy: ['worker'],
  },
  {
    name: 'POIMEN_WORKER_MAX_CACHED_WORKFLOWS',
    description: 'sticky workflow cache size (0: off)',
    readBy: ['worker'],
  },
  {
    name: 'POIMEN_RUNS_API_CONNECTIONS',
    description: 'keep-alive connections to the runs API',
    readBy: ['worker'],
  },
  {
    name: 'POIMEN_BREAKER_FAILURES',
    description: 'consecutive runs API outage failures that open the circuit breaker',
    readBy: ['worker'],
  },
  {
    name: 'POIMEN_BREAKER_PROBE_INTERVAL_MS',
    description: 'while the breaker is open, one probe call per this interval per worker',
    readBy: ['worker'],
  },
  {
    name: 'POIMEN_WORKER_SHUTDOWN_GRACE_MS',
    description: 'how long SIGTERM waits for running calls',
    readBy: ['worker'],
  },
  {
    name: 'POIMEN_CLI_CONNECT_TIMEOUT_MS',
    description: 'how long a one-shot command waits for a first answer before exit 4',
    readBy: ['kafka-cli', 'temporal-cli'],
  },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    description: 'OTLP/HTTP endpoint for traces (+ /v1/traces); unset: tracing off',
    readBy: RELAY,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    description: 'OTLP/HTTP traces URL, used as it is (wins over the generic endpoint)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_SERVICE_NAME',
    description: 'service.name of the spans (poimen-relay-<role>)',
    readBy: RELAY,
  },
  { name: 'OTEL_SDK_DISABLED', description: 'true: no tracing even with an endpoint set', readBy: RELAY },
  {
    name: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    description: 'http/protobuf (default), http/json or grpc (endpoint used as it is)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    description: 'the protocol for traces (wins over OTEL_EXPORTER_OTLP_PROTOCOL)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_HEADERS',
    description: 'headers of every export, key=value,... percent-encoded (never logged)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
    description: 'headers of trace exports, merged over OTEL_EXPORTER_OTLP_HEADERS (never logged)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_RESOURCE_ATTRIBUTES',
    description: 'resource attributes of the spans, key=value,... percent-encoded',
    readBy: RELAY,
  },
  {
    name: 'OTEL_TRACES_SAMPLER',
    description: 'always_on, always_off, traceidratio or parentbased_* (default parentbased_always_on)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_TRACES_SAMPLER_ARG',
    description: 'sampling ratio of the traceidratio samplers, 0 to 1 (default 1)',
    readBy: RELAY,
  },
  {
    name: 'OTEL_BSP_SCHEDULE_DELAY',
    description: 'ms between two exports of buffered spans; read by the SDK',
    readBy: RELAY,
  },
  { name: 'OTEL_BSP_MAX_QUEUE_SIZE', description: 'spans buffered at most; read by the SDK', readBy: RELAY },
  {
    name: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    description: 'spans per export at most; read by the SDK',
    readBy: RELAY,
  },
  { name: 'OTEL_BSP_EXPORT_TIMEOUT', description: 'ms one export may take; read by the SDK', readBy: RELAY },
  {
    name: 'OTEL_EXPORTER_OTLP_TIMEOUT',
    description: 'ms one OTLP request may take; read by the SDK',
    readBy: RELAY,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
    description: 'ms one OTLP traces request may take; read by the SDK',
    readBy: RELAY,
  },
];

export function envVarsReadBy(reader: EnvReader): EnvVar[] {
  return ENV_VARS.filter((v) => v.readBy.includes(reader));
}

/** The flag that stands for a variable: its name in lower case with dashes (KAFKA_BROKERS: --kafka-brokers). */
export function flagOf(name: string): string {
  return `--${name.toLowerCase().replace(/_/g, '-')}`;
}

/**
 * Flags given on the command line, written over the environment before any loader reads it, so a flag wins
 * over its variable everywhere in the process (and is validated like it).
 */
export function applyFlagOverrides(values: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(values)) process.env[name] = value;
}
