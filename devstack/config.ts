/** Settings of the local development stack (`poimen-dev stack`, the demo, the tests): not the relay's own. */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { defaultOf } from 'poimen-relay/internal/config/envVar';
import { type Env, bool, intIn, nonEmpty, port, read } from 'poimen-relay/internal/config/schema';
import { TEMPORAL } from 'poimen-relay/internal/config/vars/temporal';

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
  const cacheDir = read(env, 'POIMEN_CACHE_DIR', nonEmpty, path.join(home, '.cache', 'poimen-relay'));
  const temporalPort = read(env, 'POIMEN_STACK_TEMPORAL_PORT', port, 7233);
  return {
    cacheDir: path.resolve(cacheDir),
    stateDir: path.resolve(
      read(env, 'POIMEN_STATE_DIR', nonEmpty, path.join(home, '.local', 'state', 'poimen-relay')),
    ),
    kafkaVersion: read(
      env,
      'POIMEN_KAFKA_VERSION',
      z.string().regex(/^4\.\d+\.\d+$/, 'must be a Kafka 4.x version'),
      '4.1.1',
    ),
    temporalCliVersion: 'v1.5.1',
    // v1.18.4 is refused by the Go module proxy here (403); v1.18.0 is the newest tctl it serves.
    tctlVersion: 'v1.18.0',
    kafkaPort: read(env, 'POIMEN_STACK_KAFKA_PORT', port, 9092),
    kafkaControllerPort: read(env, 'POIMEN_STACK_KAFKA_CONTROLLER_PORT', port, 9093),
    temporalPort,
    temporalUiPort: read(env, 'POIMEN_STACK_TEMPORAL_UI_PORT', port, temporalPort + 1000),
    temporalMetricsPort: read(env, 'POIMEN_STACK_TEMPORAL_METRICS_PORT', port, temporalPort + 1001),
    // The relay's row: the stack makes sure the namespace the relay uses exists, under its name and default.
    namespace: read(env, NAMESPACE.name, NAMESPACE.schema, defaultOf(NAMESPACE, 'cli')),
    startTimeoutMs: read(env, 'POIMEN_STACK_START_TIMEOUT_MS', intIn(1000, 600_000), 60_000),
    temporalInMemory: read(env, 'POIMEN_STACK_TEMPORAL_IN_MEMORY', bool, false),
    temporalFairness: read(env, 'POIMEN_STACK_TEMPORAL_FAIRNESS', bool, true),
    temporalDynamicConfig: read(
      env,
      'POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG',
      z
        .string()
        .transform((v) => v.split(/\s+/).filter(Boolean))
        .pipe(z.array(z.string().regex(/^[A-Za-z0-9_.]+=\S+$/, 'must be space-separated key=value pairs'))),
      [],
    ),
    cluster: {
      temporalServerVersion: 'v1.29.1',
      kafkaBasePort: read(env, 'POIMEN_CLUSTER_KAFKA_PORT', intIn(1024, 32755), 29092),
      // Temporal's membership table stores ports as smallint: the highest, this port + 103, must stay ≤ 32767
      // (below Linux's ephemeral range too, where an outgoing connection can hold a port at any time).
      temporalPort: read(env, 'POIMEN_CLUSTER_TEMPORAL_PORT', intIn(1024, 32664), 27233),
      postgresPort: read(env, 'POIMEN_CLUSTER_POSTGRES_PORT', port, 25432),
      historyShards: 8,
      startTimeoutMs: read(env, 'POIMEN_CLUSTER_START_TIMEOUT_MS', intIn(1000, 1_800_000), 180_000),
    },
  };
}

/** The environment a child process inherits, plus overrides (e.g. GOBIN for `go install`). */
export function childEnv(overrides: Env = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
