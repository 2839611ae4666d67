/**
 * Every environment variable the dev stack reads, once: its name, its one-line meaning and the check of its value.
 * devstack/config.ts reads each through its row (its default is computed there, some from others); the dev
 * commands' `--help` lists them, and test/unit/envTable.test.ts keeps the table equal to what the loader reads.
 * Not the relay's: `poimen-relay config` and the relay's own table (src/config/envTable.ts) never name them,
 * but for the relay's namespace, whose row is the relay's.
 */
import { z } from 'zod';
import { defaultOf } from 'poimen-relay/internal/config/envVar';
import { bool, intIn, nonEmpty, port } from 'poimen-relay/internal/config/schema';
import { TEMPORAL } from 'poimen-relay/internal/config/vars/temporal';

const NAMESPACE = TEMPORAL.TEMPORAL_NAMESPACE;

export interface StackEnvVar {
  name: string;
  description: string;
}

/** A row of the dev stack: its value's check beside its name and meaning. */
export interface StackVar<T> extends StackEnvVar {
  schema: z.ZodType<T>;
}

const row = <T>(description: string, schema: z.ZodType<T>) => ({ description, schema });

/** Names each row after its key, so a name is spelled once. */
function stackRows<R extends Record<string, { description: string; schema: z.ZodType<unknown> }>>(
  r: R,
): { [K in keyof R]: R[K] & { name: K & string } } {
  return Object.fromEntries(Object.entries(r).map(([name, v]) => [name, { ...v, name }])) as never;
}

export const STACK = stackRows({
  POIMEN_CACHE_DIR: row('downloads and builds of the dev stack', nonEmpty),
  POIMEN_STATE_DIR: row("the dev stack's data, logs and pid files", nonEmpty),
  POIMEN_KAFKA_VERSION: row(
    'Kafka 4.x version of the dev stack',
    z.string().regex(/^4\.\d+\.\d+$/, 'must be a Kafka 4.x version'),
  ),
  POIMEN_STACK_KAFKA_PORT: row("the dev stack's Kafka port", port),
  POIMEN_STACK_KAFKA_CONTROLLER_PORT: row("the dev stack's KRaft controller port", port),
  POIMEN_STACK_TEMPORAL_PORT: row("the dev stack's Temporal gRPC port", port),
  POIMEN_STACK_TEMPORAL_UI_PORT: row("the dev stack's Temporal Web UI port", port),
  POIMEN_STACK_TEMPORAL_METRICS_PORT: row("the dev stack's Temporal metrics port", port),
  POIMEN_STACK_START_TIMEOUT_MS: row('how long the dev stack may take to be ready', intIn(1000, 600_000)),
  POIMEN_STACK_TEMPORAL_IN_MEMORY: row('dev stack Temporal without a database file', bool),
  POIMEN_STACK_TEMPORAL_FAIRNESS: row("the stack's Temporal task queue fairness (default true)", bool),
  POIMEN_STACK_TEMPORAL_DYNAMIC_CONFIG: row(
    'extra dynamic config of the dev server, key=value ...',
    z
      .string()
      .transform((v) => v.split(/\s+/).filter(Boolean))
      .pipe(z.array(z.string().regex(/^[A-Za-z0-9_.]+=\S+$/, 'must be space-separated key=value pairs'))),
  ),
  POIMEN_CLUSTER_KAFKA_PORT: row(
    "the cluster profile's first broker port (three brokers)",
    intIn(1024, 32755),
  ),
  // Temporal's membership table stores ports as smallint: the highest, this port + 103, must stay ≤ 32767
  // (below Linux's ephemeral range too, where an outgoing connection can hold a port at any time).
  POIMEN_CLUSTER_TEMPORAL_PORT: row("the cluster profile's Temporal frontend port", intIn(1024, 32664)),
  POIMEN_CLUSTER_START_TIMEOUT_MS: row(
    'how long the cluster profile may take to be ready (each service)',
    intIn(1000, 1_800_000),
  ),
  POIMEN_CLUSTER_POSTGRES_PORT: row("the cluster profile's PostgreSQL port", port),
});

export const STACK_ENV_VARS: readonly StackEnvVar[] = [
  ...Object.values(STACK).map(({ name, description }) => ({ name, description })),
  {
    name: NAMESPACE.name,
    description: `the namespace the stack makes sure exists (default: ${defaultOf(NAMESPACE, 'cli')})`,
  },
];
