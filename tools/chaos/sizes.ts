import type { SoakOptions, SoakResult } from './soak';

/**
 * Relay settings for the soak: the the contract's retry shape with shorter intervals, so a run drains in minutes
 * instead of waiting out 60 s backoffs, and a shorter group session so a killed ingester's partitions move in
 * 10 s instead of 30 s. Attempts stay at the contract default of 10.
 */
const SOAK_ENV = {
  RETRY_INITIAL_INTERVAL_MS: '200',
  RETRY_MAX_INTERVAL_MS: '2000',
  RUNS_API_TIMEOUT_MS: '5000',
  POIMEN_KAFKA_SESSION_TIMEOUT_MS: '10000',
};

type Size = Pick<
  SoakOptions,
  | 'dispatches'
  | 'publishSeconds'
  | 'faultSeconds'
  | 'faultGapMs'
  | 'downMs'
  | 'drainTimeoutMs'
  | 'env'
  | 'combined'
>;

/**
 * The budget lane's retry budget in the full soak: long enough for its dispatches to be started and called a few
 * times before their budget ends, short enough that a DLQ fault can be timed around it.
 */
export const LANE_BUDGET_MS = 15_000;

export const SOAK_SIZES: Record<'quick' | 'full', Size> = {
  quick: {
    dispatches: 500,
    publishSeconds: 30,
    faultSeconds: 40,
    faultGapMs: [1500, 4000],
    downMs: [200, 2000],
    drainTimeoutMs: 5 * 60_000,
    env: SOAK_ENV,
  },
  full: {
    dispatches: 10_000,
    publishSeconds: 360,
    faultSeconds: 360,
    faultGapMs: [3000, 9000],
    downMs: [200, 3000],
    drainTimeoutMs: 30 * 60_000,
    env: SOAK_ENV,
    // The overlapping faults take a minute a round; the quick soak (npm test) stays without them.
    combined: { budgetMs: LANE_BUDGET_MS },
  },
};

/** What a passing soak must show; empty when it passed. */
export function soakVerdict(r: SoakResult): string[] {
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  expect(r.drained, 'did not drain before the deadline');
  expect(r.lost === 0, `${r.lost} valid dispatches have no run`);
  expect(r.duplicate_runs === 0, `${r.duplicate_runs} duplicate runs`);
  expect(r.duplicate_executions === 0, `${r.duplicate_executions} dispatches completed twice`);
  expect(
    r.dlq_malformed_matched === r.malformed,
    `${r.malformed - r.dlq_malformed_matched} malformed records without a DLQ record`,
  );
  expect(
    r.dlq_without_reason === 0,
    `${r.dlq_without_reason} DLQ records without the expected type or reason`,
  );
  expect(r.dlq_unexpected === 0, `${r.dlq_unexpected} valid dispatches dead-lettered`);
  expect(
    r.dedup.unexplained === 0 && r.dedup.dedup_409 <= r.dedup.bound,
    `${r.dedup.dedup_409} × 409 against ${r.dedup.bound} faults that can cause one (${r.dedup.unexplained} unexplained)`,
  );
  expect(
    r.dlq_account.dlq_repeats_unexplained === 0,
    `${r.dlq_account.dlq_repeats_unexplained} dead letters repeated where no rewind reached their record`,
  );
  expect(r.committed_at_log_end, 'committed offsets short of the log end after the drain');
  expect(
    r.dlq_sources_with_two_ids === 0,
    `${r.dlq_sources_with_two_ids} records dead-lettered under two ids`,
  );
  expect(r.not_ready.length === 0, `not ready after the drain: ${r.not_ready.join(', ')}`);
  problems.push(...combinedVerdict(r));
  expect(r.executions_running === 0, `${r.executions_running} executions left Running`);
  expect(r.consumer_group_lag === 0, `consumer group lag ${r.consumer_group_lag}`);
  for (const v of ['ingester', 'worker', 'kafka', 'temporal'] as const) {
    expect(r.kills[v] > 0, `no ${v} was killed`);
  }
  if (r.profile === 'cluster') {
    expect((r.kills.postgres ?? 0) > 0, 'no postgres was killed');
    // An ingester that lost track of its group (a stale coordinator) keeps running, ready, and commits nothing.
    expect(
      r.group_members === r.ingesters,
      `${r.group_members} of ${r.ingesters} ingesters in the consumer group after the drain`,
    );
  }
  return problems;
}

/** With overlapping faults: each kind injected, and the budget lane dead-lettered in full despite its DLQ fault. */
function combinedVerdict(r: SoakResult): string[] {
  const c = r.combined_faults;
  const lane = r.budget_lane;
  if (!c && !lane) return [];
  if (!c || !lane) return ['combined faults without their budget lane, or the other way round'];
  const problems: string[] = [];
  if (c.temporal_kafka === 0) problems.push('Temporal was never down during a broker kill');
  if (c.temporal_rebalance === 0) problems.push('no rebalance during a Temporal outage');
  if (c.dlq_budget === 0) problems.push('the DLQ never refused writes around a budget end');
  if (c.dead_letters_due_in_dlq_fault === 0) problems.push('no budget ended while the DLQ refused writes');
  if (lane.dead_lettered !== lane.doomed)
    problems.push(
      `${lane.doomed - lane.dead_lettered} of ${lane.doomed} doomed dispatches not dead-lettered`,
    );
  if (lane.runs !== 0) problems.push(`${lane.runs} doomed dispatches have a run`);
  if (!lane.committed_at_log_end || lane.consumer_group_lag !== 0)
    problems.push(`budget lane: committed offsets short of the log end (lag ${lane.consumer_group_lag})`);
  return problems;
}
