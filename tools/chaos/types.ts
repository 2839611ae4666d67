/**
 * What a soak is asked to do and what it reports: kept apart from soak.ts so the verdict (verdict.ts) can build a
 * result without importing the orchestration that calls it.
 */
import type { Kafka } from 'kafkajs';
import type { ClusterServiceName } from '#devstack/stack/clusterStack';
import type { StackProfile } from '#devstack/stack/profiles';
import type { ServiceName } from '#devstack/stack/services';
import type { DedupAccount, DlqAccount } from './account';

/** Kills and restarts the shared services; the local stack or testcontainers provide it. */
export interface ServiceControl {
  kill(name: ServiceName): Promise<void>;
  /** Starts the service and resolves once its real client says it is ready. */
  start(name: ServiceName): Promise<void>;
}

/**
 * The cluster profile's services: three Kafka nodes (one killed at a time, a partition leader or the active
 * controller), the Temporal server and the PostgreSQL under it.
 */
export interface ClusterControl {
  kill(name: ClusterServiceName): Promise<void>;
  /** Starts the service and resolves once its real client says it is ready. */
  start(name: ClusterServiceName): Promise<void>;
  /** The node id of the active KRaft controller, undefined while no node knows it. */
  activeController(): Promise<number | undefined>;
}

/** The dev stack (one broker, the Temporal dev server) or the cluster profile. */
export type SoakTarget = { services: ServiceControl } | { cluster: ClusterControl };

export type SoakOptions = SoakCommon & SoakTarget;

interface SoakCommon {
  /** Comma-separated, as KAFKA_BROKERS takes them. */
  kafkaBrokers: string;
  temporalAddress: string;
  namespace: string;
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
  /** Workers on the task queue (default 2); a kill takes one of them. */
  workers?: number;
  /**
   * Overlapping faults as well (combined.ts), and the budget lane they need: dispatches the API always refuses,
   * on a tenant of their own whose ingester gives them this retry budget (ms).
   */
  combined?: { budgetMs: number };
  progress?: (message: string) => void;
}

/** What a fault kills: PostgreSQL only on the cluster profile (the dev server keeps its state in SQLite). */
export type Victim = 'ingester' | 'worker' | 'kafka' | 'temporal' | 'postgres';
export type Kills = Record<Exclude<Victim, 'postgres'>, number> & { postgres?: number; total: number };

/** The cluster's server faults in detail: which broker role each Kafka kill hit, and how long restarts took. */
export interface ClusterFaults {
  /** Kafka kills by the roles the killed node had (one kill can count in both): leader of a dispatch partition, active KRaft controller. */
  kafka_targets: { partition_leader: number; controller: number };
  /** Restarts that failed at once and were tried again (the killed process not yet gone). */
  start_retries: number;
  /** Seconds from kill -9 to ready again (Kafka: and back in every dispatch partition's ISR), per service. */
  restart_s: Record<'kafka' | 'temporal' | 'postgres', { count: number; mean: number; max: number }>;
}

/** The overlapping faults of a soak run with `combined` (combined.ts). */
export interface CombinedFaults {
  /** Temporal down while a Kafka broker was killed and restarted. */
  temporal_kafka: number;
  /** Temporal down while an ingester was killed and started again (two rebalances). */
  temporal_rebalance: number;
  /** The budget lane's DLQ topic refusing writes around its dispatches' budget ends. */
  dlq_budget: number;
  /** Dead letters whose budget ended while their DLQ topic refused writes. */
  dead_letters_due_in_dlq_fault: number;
}

/** The budget lane's account: dispatches the API always refuses, which must each be dead-lettered once. */
export interface LaneAccount {
  doomed: number;
  /** Doomed dispatches with a `dispatch_failure` dead letter. */
  dead_lettered: number;
  /** Doomed dispatches the API admitted: it never does, so any is a bug in the soak. */
  runs: number;
  /** Dead letters of the lane in all (repeats of one id after a rewind included). */
  dlq: number;
  committed_at_log_end: boolean;
  consumer_group_lag: number;
}

export interface SoakResult {
  profile: StackProfile;
  ingesters: number;
  workers: number;
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
  /** Members of the relay's group after the drain; every running ingester should be one. */
  group_members: number;
  /** The group's committed offsets equal the log end on every dispatch partition after the drain. */
  committed_at_log_end: boolean;
  kills: Kills;
  /** Cluster profile only. */
  cluster_faults?: ClusterFaults;
  /** With `combined` only: the overlapping faults and the budget lane's account. */
  combined_faults?: CombinedFaults;
  budget_lane?: LaneAccount;
  /**
   * Source records (a dispatch or a malformed record, by topic, partition and offset) dead-lettered under more
   * than one id: a repeated write must carry the same id.
   */
  dlq_sources_with_two_ids: number;
  /** Relay processes whose /readyz did not answer 200 within a minute of the drain. */
  not_ready: string[];
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
