/**
 * Every environment variable the dev stack reads (devstack/config.ts), once, with its one-line meaning: the dev
 * commands' `--help` lists them, and test/unit/envTable.test.ts keeps the table equal to what the loader reads.
 * Not the relay's: `poimen-relay config` and the relay's own table (src/config/envTable.ts) never name them.
 */
import { defaultOf } from 'poimen-relay/internal/config/envVar';
import { TEMPORAL } from 'poimen-relay/internal/config/vars/temporal';

const NAMESPACE = TEMPORAL.TEMPORAL_NAMESPACE;

export interface StackEnvVar {
  name: string;
  description: string;
}

export const STACK_ENV_VARS: readonly StackEnvVar[] = [
  { name: 'POIMEN_CACHE_DIR', description: 'downloads and builds of the dev stack' },
  { name: 'POIMEN_STATE_DIR', description: "the dev stack's data, logs and pid files" },
  { name: 'POIMEN_KAFKA_VERSION', description: 'Kafka 4.x version of the dev stack' },
  { name: 'POIMEN_STACK_KAFKA_PORT', description: "the dev stack's Kafka port" },
  { name: 'POIMEN_STACK_KAFKA_CONTROLLER_PORT', description: "the dev stack's KRaft controller port" },
  { name: 'POIMEN_STACK_TEMPORAL_PORT', description: "the dev stack's Temporal gRPC port" },
  { name: 'POIMEN_STACK_TEMPORAL_UI_PORT', description: "the dev stack's Temporal Web UI port" },
  { name: 'POIMEN_STACK_TEMPORAL_METRICS_PORT', description: "the dev stack's Temporal metrics port" },
  { name: 'POIMEN_STACK_START_TIMEOUT_MS', description: 'how long the dev stack may take to be ready' },
  { name: 'POIMEN_STACK_TEMPORAL_IN_MEMORY', description: 'dev stack Temporal without a database file' },
  {
    name: 'POIMEN_STACK_TEMPORAL_FAIRNESS',
    description: "the stack's Temporal task queue fairness (default true)",
  },
  {
    name: 'POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG',
    description: 'extra dynamic config of the dev server, key=value ...',
  },
  {
    name: NAMESPACE.name,
    description: `the namespace the stack makes sure exists (default: ${defaultOf(NAMESPACE, 'cli')})`,
  },
  {
    name: 'POIMEN_CLUSTER_KAFKA_PORT',
    description: "the cluster profile's first broker port (three brokers)",
  },
  { name: 'POIMEN_CLUSTER_TEMPORAL_PORT', description: "the cluster profile's Temporal frontend port" },
  {
    name: 'POIMEN_CLUSTER_START_TIMEOUT_MS',
    description: 'how long the cluster profile may take to be ready (each service)',
  },
  { name: 'POIMEN_CLUSTER_POSTGRES_PORT', description: "the cluster profile's PostgreSQL port" },
];
