/**
 * Rows of the env table for the ingester's tuning (beyond contract §8, prefixed POIMEN_): how much it keeps in
 * flight, how it shares turns between partitions and tenants, how often it looks around, and the bounds of its
 * Kafka fetches and Temporal starts. Each row is the variable's one home (envVar.ts).
 */
import { parsed, rows } from '../envVar';
import { intIn, tenantWeights } from '../schema';

export const INGEST = rows({
  POIMEN_INGEST_MAX_IN_FLIGHT: parsed({
    description: 'workflow starts / DLQ writes in flight',
    readBy: ['ingest'],
    schema: intIn(1, 10_000),
    default: 16,
  }),
  POIMEN_INGEST_MAX_IN_FLIGHT_BYTES: parsed({
    description: 'record bytes in flight',
    readBy: ['ingest'],
    schema: intIn(1024, 1024 ** 3),
    default: 1024 * 1024,
  }),
  POIMEN_INGEST_BATCH_SLICE_MS: parsed({
    description: "how long one partition's batch runs before the others get their turn",
    readBy: ['ingest'],
    schema: intIn(10, 600_000),
    default: 100,
  }),
  POIMEN_TENANT_WEIGHTS: parsed({
    description: "tenants' fairness weights in Temporal, tenant=weight,... (1 if unnamed)",
    readBy: ['ingest'],
    schema: tenantWeights,
    default: Object.freeze({}),
  }),
  POIMEN_INGEST_MAX_OPEN: parsed({
    description:
      'open dispatches per ingester in all: a lone tenant nearly all, several share fairly (0: no fair shares)',
    readBy: ['ingest'],
    schema: intIn(0, 1_000_000),
    default: 256,
  }),
  POIMEN_INGEST_TENANT_MAX_OPEN: parsed({
    description:
      "a fixed cap on a tenant's started, still-open dispatches per ingester, besides its fair share (0: none)",
    readBy: ['ingest'],
    schema: intIn(0, 1_000_000),
    default: 0,
  }),
  POIMEN_INGEST_PARTITIONS_CONCURRENTLY: parsed({
    description: 'partitions consumed at the same time',
    readBy: ['ingest'],
    schema: intIn(1, 1000),
    default: 4,
  }),
  POIMEN_INGEST_COMMIT_EVERY: parsed({
    description: 'commit at least every N records of a batch',
    readBy: ['ingest'],
    schema: intIn(1, 1_000_000),
    default: 200,
  }),
  POIMEN_TOPIC_REFRESH_MS: parsed({
    description: 'how often new dispatch topics are looked for',
    readBy: ['ingest'],
    schema: intIn(100, 3_600_000),
    default: 10_000,
  }),
  POIMEN_LAG_REFRESH_MS: parsed({
    description: 'how often poimen_inbox_lag is recomputed',
    readBy: ['ingest'],
    schema: intIn(100, 3_600_000),
    default: 5_000,
  }),
  POIMEN_DLQ_REFRESH_MS: parsed({
    description: 'how often the DLQ backlog gauges are recomputed',
    readBy: ['ingest'],
    schema: intIn(100, 3_600_000),
    default: 30_000,
  }),
  POIMEN_TEMPORAL_START_TIMEOUT_MS: parsed({
    description: 'deadline of one workflow start before it is retried',
    readBy: ['ingest'],
    schema: intIn(100, 600_000),
    default: 10_000,
  }),
  POIMEN_KAFKA_FETCH_MAX_BYTES: parsed({
    description: 'bytes one fetch round may hold',
    readBy: ['ingest'],
    schema: intIn(1024, 1024 ** 3),
    default: 8 * 1024 * 1024,
  }),
  POIMEN_KAFKA_FETCH_MAX_BYTES_PER_PARTITION: parsed({
    description: 'bytes one fetch round may hold per partition',
    readBy: ['ingest'],
    schema: intIn(1024, 1024 ** 3),
    default: 1024 * 1024,
  }),
  POIMEN_KAFKA_SESSION_TIMEOUT_MS: parsed({
    description: "how long the group waits for a silent ingester's partitions",
    readBy: ['ingest'],
    schema: intIn(6_000, 300_000),
    default: 30_000,
  }),
  POIMEN_TEMPORAL_MAX_INPUT_BYTES: parsed({
    description: 'largest workflow input started; larger dispatches are dead-lettered',
    readBy: ['ingest'],
    schema: intIn(1024, 1024 ** 3),
    // Temporal's default blob size limit is 2 MiB; the rest of the input (source, policy) is small.
    default: 2 * 1024 * 1024 - 64 * 1024,
  }),
});
