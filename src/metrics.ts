/**
 * The relay's Prometheus metrics (contract §7), on a registry per process so tests can run several in one
 * process without collisions. Label values never carry secrets: codes, topics, tenants and partitions only.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { INGEST } from './config/vars/ingest';
import { readBuildInfo } from './version';

export interface RelayMetrics {
  registry: Registry;
  inboxLag: Gauge<'topic' | 'partition'>;
  dispatchRecords: Counter<'tenant' | 'outcome'>;
  dlqSent: Counter<'topic' | 'type' | 'error_class' | 'http_status'>;
  dlqConsumerLag: Gauge<'topic'>;
  dlqOldestAge: Gauge<'topic'>;
  runsApiRequests: Counter<'code'>;
  runsApiDuration: Histogram;
  dispatchLatency: Histogram;
  pausedPartitions: Gauge<'topic'>;
  tenantOpenDispatches: Gauge<'tenant'>;
  tenantPaused: Gauge<'tenant'>;
  openBudget: Gauge;
  loneCloses: Counter<'via'>;
  keptFetchBytes: Gauge;
  undecodablePartitions: Gauge<'topic' | 'partition'>;
  circuitState: Gauge;
  breakerWaiting: Gauge;
}

export type DispatchOutcome = 'started' | 'duplicate' | 'dead_lettered';

export type ProcessRole = 'ingester' | 'worker';

/**
 * `role`: the process these metrics belong to; it adds `poimen_relay_build_info` (the `*_build_info` convention:
 * value 1, the facts in labels, so a query can join them onto any series by instance).
 */
export function createMetrics(opts: { defaultMetrics?: boolean; role?: ProcessRole } = {}): RelayMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  if (opts.role) {
    const build = readBuildInfo();
    new Gauge({
      name: 'poimen_relay_build_info',
      help: 'Always 1; labels: the relay version, Node.js version and git commit ("unknown" if the build did not record it), and the process role',
      labelNames: ['version', 'node_version', 'commit', 'role'],
      registers,
    }).set(
      { version: build.version, node_version: build.nodeVersion, commit: build.commit, role: opts.role },
      1,
    );
  }
  return {
    registry,
    inboxLag: new Gauge({
      name: 'poimen_inbox_lag',
      help: 'Records in a dispatch partition not yet committed by the ingester group (last stable offset - committed offset)',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    dispatchRecords: new Counter({
      name: 'poimen_dispatch_records_total',
      help: 'Dispatch records handled by the ingester, by outcome',
      labelNames: ['tenant', 'outcome'],
      registers,
    }),
    dlqSent: new Counter({
      name: 'dlq_messages_sent_total',
      help: 'Dead-letter records published, by type, error class (the reason without its details) and HTTP status ("none" without one)',
      // Bounded: 3 types; error classes come from the relay's own reasons (contract/dlqErrorClass.ts); statuses.
      labelNames: ['topic', 'type', 'error_class', 'http_status'],
      registers,
    }),
    dlqConsumerLag: new Gauge({
      name: 'dlq_consumer_lag',
      help: "Dead-letter records not yet replayed (the tenant's consumer group poimen-relay-dlq.<tenant>)",
      labelNames: ['topic'],
      registers,
    }),
    dlqOldestAge: new Gauge({
      name: 'dlq_oldest_message_age_seconds',
      help: 'Age of the oldest dead-letter record not yet replayed',
      labelNames: ['topic'],
      registers,
    }),
    runsApiRequests: new Counter({
      name: 'poimen_runs_api_requests_total',
      help: 'POST /v1/runs attempts by HTTP status, or "timeout" / "error" for transport failures',
      labelNames: ['code'],
      registers,
    }),
    runsApiDuration: new Histogram({
      name: 'poimen_runs_api_request_duration_seconds',
      help: 'Duration of one POST /v1/runs attempt',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    dispatchLatency: new Histogram({
      name: 'poimen_dispatch_latency_seconds',
      help: 'Kafka record timestamp to successful POST /v1/runs',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers,
    }),
    pausedPartitions: new Gauge({
      name: 'poimen_ingest_paused_partitions',
      help: 'Dispatch partitions the ingester holds paused because a record of theirs cannot be started or dead-lettered yet (outage)',
      labelNames: ['topic'],
      registers,
    }),
    openBudget: new Gauge({
      name: 'poimen_ingest_open_budget',
      help: `Open dispatches this ingester shares among its active tenants now (what the relay completes, with headroom; at most ${INGEST.POIMEN_INGEST_MAX_OPEN.name})`,
      registers,
    }),
    loneCloses: new Counter({
      name: 'poimen_ingest_lone_closes_total',
      help: "Watches of a lone tenant's dispatches, by what answered them: visibility (one query for all) or long_poll (not seen within 10 s, visibility failing or refused, another tenant arrived)",
      labelNames: ['via'],
      registers,
    }),
    tenantOpenDispatches: new Gauge({
      name: 'poimen_ingest_tenant_open_dispatches',
      help: 'Dispatches this ingester started for the tenant that are still open, counted by admission (at its share, the tenant waits in Kafka)',
      labelNames: ['tenant'],
      registers,
    }),
    tenantPaused: new Gauge({
      name: 'poimen_tenant_paused',
      help: '1 while an operator has the tenant paused (poimen-relay tenant pause): this ingester starts none of its dispatches, which wait in Kafka; 0 once resumed',
      labelNames: ['tenant'],
      registers,
    }),
    keptFetchBytes: new Gauge({
      name: 'poimen_ingest_kept_fetch_bytes',
      help: `Fetched bytes the ingester keeps for batches that handed their turn back and go on from memory (at most twice ${INGEST.POIMEN_KAFKA_FETCH_MAX_BYTES.name})`,
      registers,
    }),
    undecodablePartitions: new Gauge({
      name: 'poimen_ingest_undecodable_partitions',
      help: 'Dispatch partitions held at a record batch the ingester cannot decode (1 while held; needs an operator)',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    circuitState: new Gauge({
      name: 'poimen_runs_api_circuit_state',
      help: "This worker's circuit breaker on the runs API: 0 closed, 1 open, 2 half-open",
      registers,
    }),
    breakerWaiting: new Gauge({
      name: 'poimen_runs_api_breaker_waiting',
      help: 'Runs API attempts in this worker waiting for the circuit breaker to let them call',
      registers,
    }),
  };
}
