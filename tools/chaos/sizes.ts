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
  'dispatches' | 'publishSeconds' | 'faultSeconds' | 'faultGapMs' | 'downMs' | 'drainTimeoutMs' | 'env'
>;

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
