/**
 * Settings of the local development stack (`poimen-dev stack`, the demo, the tests): not the relay's own. Each
 * variable's name and check are its row in ./envTable.ts; its default is here.
 */
import os from 'node:os';
import path from 'node:path';
import { defaultOf } from 'poimen-relay/internal/config/envVar';
import { type Env, read } from 'poimen-relay/internal/config/schema';
import { TEMPORAL } from 'poimen-relay/internal/config/vars/temporal';
import { STACK, type StackVar } from './envTable';

/** Where the local development stack keeps its downloads (cache) and its data and logs (state). */
export interface StackConfig {
  cacheDir: string;
  stateDir: string;
  kafkaVersion: string;
  temporalCliVersion: string;
  tctlVersion: string;
  kafkaPort: number;
  kafkaControllerPort: number;
  temporalPort: number;
  temporalUiPort: number;
  temporalMetricsPort: number;
  namespace: string;
  startTimeoutMs: number;
  /** Temporal without a database file (the benchmark compares it with SQLite WAL). */
  temporalInMemory: boolean;
  /** Temporal's task queue fairness on (devstack/stack/fairness.ts); off only to measure the relay without it. */
  temporalFairness: boolean;
  /** Extra dynamic config of the dev server, `key=value` each (e.g. a lowered blob size limit in a test). */
  temporalDynamicConfig: string[];
  /** The cluster profile (`--profile cluster`): its own ports, so it runs beside the dev profile. */
  cluster: ClusterStackConfig;
}

export interface ClusterStackConfig {
  /** Go module version of the real Temporal server (and its temporal-sql-tool). */
  temporalServerVersion: string;
  /** Brokers listen on this port and the next two; their KRaft controllers on this port + 10, 11, 12. */
  kafkaBasePort: number;
  /** The frontend's gRPC port; history, matching and worker take the next three, membership + 100, metrics + 1001. */
  temporalPort: number;
  postgresPort: number;
  /** Fixed when the cluster's database is first created. */
  historyShards: number;
  /** A broker restarted after kill -9 recovers every partition's log first: a minute or more on 2 busy cores. */
  startTimeoutMs: number;
}

const NAMESPACE = TEMPORAL.TEMPORAL_NAMESPACE;

export function loadStackConfig(env: Env = process.env): StackConfig {
  const home = os.homedir();
  const get = <T>(v: StackVar<T>, fallback: T): T => read(env, v.name, v.schema, fallback);
  const temporalPort = get(STACK.POIMEN_STACK_TEMPORAL_PORT, 7233);
  return {
    cacheDir: path.resolve(get(STACK.POIMEN_CACHE_DIR, path.join(home, '.cache', 'poimen-relay'))),
    stateDir: path.resolve(get(STACK.POIMEN_STATE_DIR, path.join(home, '.local', 'state', 'poimen-relay'))),
    kafkaVersion: get(STACK.POIMEN_KAFKA_VERSION, '4.1.1'),
    temporalCliVersion: 'v1.5.1',
    // v1.18.4 is refused by the Go module proxy here (403); v1.18.0 is the newest tctl it serves.
    tctlVersion: 'v1.18.0',
    kafkaPort: get(STACK.POIMEN_STACK_KAFKA_PORT, 9092),
    kafkaControllerPort: get(STACK.POIMEN_STACK_KAFKA_CONTROLLER_PORT, 9093),
    temporalPort,
    temporalUiPort: get(STACK.POIMEN_STACK_TEMPORAL_UI_PORT, temporalPort + 1000),
    temporalMetricsPort: get(STACK.POIMEN_STACK_TEMPORAL_METRICS_PORT, temporalPort + 1001),
    // The relay's row: the stack makes sure the namespace the relay uses exists, under its name and default.
    namespace: read(env, NAMESPACE.name, NAMESPACE.schema, defaultOf(NAMESPACE, 'cli')),
    startTimeoutMs: get(STACK.POIMEN_STACK_START_TIMEOUT_MS, 60_000),
    temporalInMemory: get(STACK.POIMEN_STACK_TEMPORAL_IN_MEMORY, false),
    temporalFairness: get(STACK.POIMEN_STACK_TEMPORAL_FAIRNESS, true),
    temporalDynamicConfig: get(STACK.POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG, []),
    cluster: {
      temporalServerVersion: 'v1.29.1',
      kafkaBasePort: get(STACK.POIMEN_CLUSTER_KAFKA_PORT, 29092),
      temporalPort: get(STACK.POIMEN_CLUSTER_TEMPORAL_PORT, 27233),
      postgresPort: get(STACK.POIMEN_CLUSTER_POSTGRES_PORT, 25432),
      historyShards: 8,
      startTimeoutMs: get(STACK.POIMEN_CLUSTER_START_TIMEOUT_MS, 180_000),
    },
  };
}

/** The environment a child process inherits, plus overrides (e.g. GOBIN for `go install`). */
export function childEnv(overrides: Env = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
