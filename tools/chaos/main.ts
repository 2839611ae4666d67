/**
 * `npm run chaos [-- --quick] [--profile dev|cluster] [--ingesters N] [--workers N] [--dispatches N] [--seconds S]
 * [--seed S] [--no-combined]`; `npm run chaos -- --endurance [--records N]` runs the endurance run instead
 * (endurance.ts).
 * the kill -9 soak on the local stack: the dev profile (one broker, Temporal persisted in SQLite) or the cluster
 * profile (three brokers, the Temporal server on PostgreSQL; PostgreSQL is killed too). Prints a summary table and
 * writes tools/results/chaos[-cluster]-<date>[-quick].json; exits 1 when anything was lost, doubled, left running
 * or left unconsumed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, Option } from 'commander';
import { loadStackConfig } from '#devstack/config';
import { ClusterStack, KAFKA_NODES } from '#devstack/stack/clusterStack';
import { clusterPaths } from '#devstack/stack/clusterPaths';
import { STACK_PROFILES, type StackProfile, openStack, stackEndpoints } from '#devstack/stack/profiles';
import { consoleProgress } from '#devstack/stack/progress';
import { PACKAGE_ROOT } from 'poimen-relay/internal/version';
import { activeControllerFromQuorumState } from './servers';
import { ENDURANCE_RECORDS, reportEndurance } from './enduranceReport';
import { runEndurance } from './endurance';
import { SOAK_SIZES, soakVerdict } from './sizes';
import { type SoakResult, runSoak } from './soak';
import type { SoakTarget } from './types';
import { STACK } from '#devstack/envTable';
import { ConfigError } from 'poimen-relay/internal/errors';
import { exitFailed, intAtLeast } from '../cli';

async function main(): Promise<void> {
  const opts = new Command('chaos')
    .option('--quick', 'the small soak that npm test also runs')
    .addOption(
      new Option(
        '--profile <profile>',
        'the stack to soak: dev, or cluster (3 brokers, Temporal on PostgreSQL)',
      )
        .choices(STACK_PROFILES)
        .default('dev'),
    )
    .option('--ingesters <n>', 'ingesters in the consumer group (default 2)', intAtLeast(1))
    .option('--workers <n>', 'workers on the task queue (default 2)', intAtLeast(1))
    .option('--dispatches <n>', 'records to publish (overrides the size)', intAtLeast(1))
    .option(
      '--seconds <n>',
      'publish over, and keep killing for, this long (overrides the size)',
      intAtLeast(10),
    )
    .option('--seed <n>', 'schedule seed, to re-run a soak', intAtLeast(0))
    .option(
      '--endurance',
      'instead of the soak: records through a stable group, heap and RSS sampled (endurance.ts)',
    )
    .option('--records <n>', 'records of the endurance run (default 1,000,000)', intAtLeast(1000))
    .option('--no-combined', 'without the overlapping faults and their budget lane (the full soak has them)')
    .parse(process.argv)
    .opts<{
      quick?: boolean;
      profile: StackProfile;
      ingesters?: number;
      workers?: number;
      dispatches?: number;
      seconds?: number;
      seed?: number;
      combined: boolean;
      endurance?: boolean;
      records?: number;
    }>();
  const mode = opts.quick ? 'quick' : 'full';
  const { profile } = opts;
  const { combined: _combined, ...sized } = SOAK_SIZES[mode];
  const size = opts.combined && _combined ? { ...sized, combined: _combined } : sized;
  const progress = consoleProgress('chaos');
  const loaded = loadStackConfig();
  // A JVM broker that must catch up, or the Temporal server re-acquiring its shards, can take minutes on a busy
  // 2-core machine: a slow restart is not a finding, so the cluster waits up to 3 minutes for a service.
  const cfg =
    profile === 'cluster' ? { ...loaded, startTimeoutMs: Math.max(loaded.startTimeoutMs, 180_000) } : loaded;
  if (profile === 'dev' && cfg.temporalInMemory) {
    throw new ConfigError(
      STACK.POIMEN_STACK_TEMPORAL_IN_MEMORY.name,
      '= true: the soak kills Temporal, so it needs SQLite persistence',
    );
  }
  const stack = openStack(cfg, profile, progress);
  await stack.up();
  const endpoints = stackEndpoints(cfg, profile);
  const logsDir = profile === 'cluster' ? clusterPaths(cfg).logsDir : path.join(cfg.stateDir, 'logs');
  if (opts.endurance) {
    const endured = await runEndurance({
      kafkaBrokers: endpoints.kafka.bootstrap,
      temporalAddress: endpoints.temporal.address,
      namespace: endpoints.temporal.namespace,
      logsDir,
      cluster: profile === 'cluster',
      records: opts.records ?? ENDURANCE_RECORDS,
      ...(opts.ingesters ? { ingesters: opts.ingesters } : {}),
      ...(opts.workers ? { workers: opts.workers } : {}),
      progress,
    });
    return reportEndurance(profile, endured);
  }
  const target: SoakTarget =
    stack instanceof ClusterStack
      ? {
          cluster: {
            kill: async (name) => void (await stack.stopService(name, 'SIGKILL')),
            start: (name) => stack.startService(name),
            activeController: async () =>
              activeControllerFromQuorumState(KAFKA_NODES.map((_, i) => clusterPaths(cfg).kafkaDir(i + 1))),
          },
        }
      : {
          services: {
            kill: async (name) => void (await stack.stopService(name, 'SIGKILL')),
            start: (name) => stack.startService(name),
          },
        };
  const started = Date.now();
  const result = await runSoak({
    kafkaBrokers: endpoints.kafka.bootstrap,
    temporalAddress: endpoints.temporal.address,
    namespace: endpoints.temporal.namespace,
    logsDir,
    ...target,
    ...size,
    ...(opts.ingesters ? { ingesters: opts.ingesters } : {}),
    ...(opts.workers ? { workers: opts.workers } : {}),
    ...(opts.dispatches ? { dispatches: opts.dispatches } : {}),
    ...(opts.seconds ? { publishSeconds: opts.seconds, faultSeconds: opts.seconds } : {}),
    ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    progress,
  });
  const out = {
    date: new Date().toISOString(),
    mode,
    duration_s: Math.round((Date.now() - started) / 1000),
    ...result,
    machine: {
      cores: os.cpus().length,
      memory_gib: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
    },
  };
  const rows: [string, string][] = [
    [
      'dispatches published',
      `${out.dispatches} (${out.unique_valid} unique valid, ${out.duplicates} duplicates, ${out.malformed} malformed)`,
    ],
    ['runs at the API', `${out.runs}; lost ${out.lost}; duplicate runs ${out.duplicate_runs}`],
    ['workflow ids with two executions', String(out.duplicate_executions)],
    [
      '409s / faults that can cause one',
      `${out.dedup.dedup_409} / ${out.dedup.bound} (${out.dedup.dropped_after_admit} answers dropped after admission, ${out.dedup.answered_in_fault_windows} answers near a worker kill or Temporal outage, ${out.dedup.client_timeouts_after_admit} attempts timed out after admission); unexplained ${out.dedup.unexplained}`,
    ],
    [
      'DLQ copies per id',
      `max ${out.dlq_account.dlq_max_copies_per_id}, ${out.dlq_account.dlq_repeats} repeats, ${out.dlq_account.dlq_repeats_unexplained} outside a rewind`,
    ],
    ['committed offsets at the log end', String(out.committed_at_log_end)],
    ['records dead-lettered under two ids', String(out.dlq_sources_with_two_ids)],
    ['not ready after the drain', out.not_ready.join(', ') || 'none'],
    ...combinedRows(out),
    [
      'DLQ records',
      `${out.dlq}, ${out.dlq_distinct_ids} distinct ids (${out.dlq_malformed_matched}/${out.malformed} malformed matched, ${out.dlq_unexpected} for valid dispatches, ${out.dlq_without_reason} without the right reason)`,
    ],
    [
      'left Running / group lag / group members',
      `${out.executions_running} / ${out.consumer_group_lag} / ${out.group_members} of ${out.ingesters} ingesters`,
    ],
    [
      'kills (kill -9)',
      `${out.kills.total}: ingester ${out.kills.ingester} (of ${out.ingesters}), worker ${out.kills.worker} (of ${out.workers}), kafka ${out.kills.kafka}, temporal ${out.kills.temporal}${out.kills.postgres !== undefined ? `, postgres ${out.kills.postgres}` : ''}`,
    ],
    ...clusterRows(out.cluster_faults),
    [
      'runs API faults',
      `${out.api.unavailable_503} × 503, ${out.api.dropped} dropped sockets, ${out.api.dedup_409} × 409 dedup of ${out.api.requests} calls`,
    ],
    ['POSTs per valid dispatch', String(out.posts_per_valid_dispatch)],
    ['fault window / drain after last fault', `${out.fault_window_s} s / ${out.drain_after_last_fault_s} s`],
  ];
  process.stdout.write(
    `\npoimen-relay chaos soak (${profile} profile, ${mode}, seed ${out.seed}, ${out.duration_s} s)\n`,
  );
  for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(40)} ${v}\n`);
  const dir = path.join(PACKAGE_ROOT, 'tools', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(
    dir,
    `chaos-${profile === 'cluster' ? 'cluster-' : ''}${out.date.slice(0, 10)}${mode === 'quick' ? '-quick' : ''}.json`,
  );
  fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`\nwritten to ${path.relative(process.cwd(), file)}\n`);
  const problems = soakVerdict(result);
  if (problems.length > 0) {
    process.stderr.write(`chaos: FAILED: ${problems.join('; ')}\n`);
    process.exit(1);
  }
}

function combinedRows({ combined_faults: c, budget_lane: l }: SoakResult): [string, string][] {
  if (!c || !l) return [];
  return [
    [
      'overlapping faults',
      `Temporal down + broker kill ${c.temporal_kafka}, rebalance during a Temporal outage ${c.temporal_rebalance}, DLQ refusing writes at budget ends ${c.dlq_budget} (${c.dead_letters_due_in_dlq_fault} dead letters due meanwhile)`,
    ],
    [
      'budget lane (always 503)',
      `${l.dead_lettered}/${l.doomed} dead-lettered, ${l.dlq} DLQ records, ${l.runs} runs, lag ${l.consumer_group_lag}`,
    ],
  ];
}

function clusterRows(c: SoakResult['cluster_faults']): [string, string][] {
  if (!c) return [];
  const r = c.restart_s;
  const fmt = (x: { count: number; mean: number; max: number }) => `mean ${x.mean} s, max ${x.max} s`;
  return [
    [
      'Kafka nodes killed as',
      `dispatch partition leader ${c.kafka_targets.partition_leader}, active controller ${c.kafka_targets.controller}`,
    ],
    [
      'kill to ready again',
      `kafka (back in every ISR) ${fmt(r.kafka)}; temporal ${fmt(r.temporal)}; postgres ${fmt(r.postgres)}`,
    ],
  ];
}

main().catch((err: unknown) => exitFailed('chaos', err));
