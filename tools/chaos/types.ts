/**
 * What a soak is asked to do and what it reports: kept apart from soak.ts so the verdict (verdict.ts) can build a
 * result without importing the orchestration that calls it.
 */
import type { Kafka } from 'kafkajs';
import type { ServiceName } from '../../src/devstack/stack/services';
import type { DedupAccount, DlqAccount } from './account';

/** Kills and restarts the shared services; the local stack or testcontainers provide it. */
export interface ServiceControl {
  kill(name: ServiceName): Promise<void>;
  /** Starts the service and resolves once its real client says it is ready. */
  start(name: ServiceName): Promise<void>;
}

export interface SoakOptions {
  kafkaBrokers: string;
  temporalAddress: string;
  namespace: string;
  services: ServiceControl;
  logsDir: string;
  /** Records published in all: unique valid ones, ~10 % duplicates, ~2 % malformed. */
  dispatches: number;
  duplicateShare?: number;
  malformedShare?: number;
  /** Publishing is spread over this long, so faults land in the middle of the traffic. */
  publishSeconds: number;
  /** Faults go on at least this long (and until publishing is done). */
  faultSeconds: number;
  /** Pause between one component back up and the next kill, drawn uniformly from this range. */
  faultGapMs?: [number, number];
  /** How long a killed component stays down. */
  downMs?: [number, number];
  /** The runs API's answers when nothing else is scripted. */
  apiUnavailableShare?: number;
  apiDropShare?: number;
  partitions?: number;
  drainTimeoutMs: number;
  seed?: number;
  /** Extra relay environment (e.g. faster retries for the quick run). */
  env?: Record<string, string>;
  /** Ingesters in the one consumer group (default 2); a kill takes one of them. */
  ingesters?: number;
  progress?: (message: string) => void;
}

export type Victim = 'ingester' | 'worker' | 'kafka' | 'temporal';

export interface SoakResult {
  /** Records published to `.dispatch`, duplicates and malformed ones included. */
  dispatches: number;
  unique_valid: number;
  duplicates: number;
  malformed: number;
  /** Unique valid dispatch keys with a run at the API. */
  runs: number;
  /** Unique valid dispatch keys with no run. */
  lost: number;
  /** Runs the API created beyond one per dispatch key. */
  duplicate_runs: number;
  /**
   * Workflow ids with more than one execution of any status: the relay's own share of "never twice" (the API
   * double's dedup makes `duplicate_runs` 0 by construction once the relay sends the right key).
   */
  duplicate_executions: number;
  /** DLQ records written in all; matched: one per malformed record; unexpected: for valid dispatches. */
  dlq: number;
  /**
   * Distinct DLQ record ids. A malformed record redelivered after a crash is dead-lettered again under the
   * same id (derived from its source coordinates), so dlq − dlq_distinct_ids counts such repeats.
   */
  dlq_distinct_ids: number;
  dlq_malformed_matched: number;
  dlq_unexpected: number;
  /** Malformed records whose DLQ record carries no reason. */
  dlq_without_reason: number;
  /** The exactly-once account of the relay's calls: every 409 tied to a fault that can cause it. */
  dedup: DedupAccount;
  /** Dead letters per id: a repeat only where an ingester kill, a broker kill or a rebalance rewound it. */
  dlq_account: DlqAccount;
  executions_running: number;
  consumer_group_lag: number;
  /** The group's committed offsets equal the log end on every dispatch partition after the drain. */
  committed_at_log_end: boolean;
  kills: Record<Victim, number> & { total: number };
  api: { requests: number; unavailable_503: number; dropped: number; dedup_409: number };
  posts_per_valid_dispatch: number;
  publish_s: number;
  fault_window_s: number;
  drain_after_last_fault_s: number;
  drained: boolean;
  seed: number;
  settings: Record<string, unknown>;
}

/** One soak's own names: its tenant (so its topics), the relay's consumer group and task queue. */
export interface SoakRun {
  kafka: Kafka;
  tenant: string;
  run: string;
  groupId: string;
  taskQueue: string;
}
