/**
 * `npm run chaos [-- --quick] [--dispatches N] [--seed S]`: the kill -9 soak on the local stack (Temporal
 * persisted in SQLite). Prints a summary table and writes tools/results/chaos-<date>[-quick].json; exits 1
 * when anything was lost, doubled, left running or left unconsumed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { loadStackConfig } from '../../src/config';
import { consoleProgress } from '../../src/devstack/stack/progress';
import { PACKAGE_ROOT } from '../../src/version';
import { LocalStack } from '../../src/devstack/stack/stack';
import { SOAK_SIZES, soakVerdict } from './sizes';
import { runSoak } from './soak';

const intAtLeast =
  (min: number) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min) throw new InvalidArgumentError(`must be a whole number ≥ ${min}`);
    return n;
  };

async function main(): Promise<void> {
  const opts = new Command('chaos')
    .option('--quick', 'the small soak that npm test also runs')
    .option('--dispatches <n>', 'records to publish (overrides the size)', intAtLeast(1))
    .option('--seed <n>', 'schedule seed, to re-run a soak', intAtLeast(0))
    .parse(process.argv)
    .opts<{ quick?: boolean; dispatches?: number; seed?: number }>();
  const mode = opts.quick ? 'quick' : 'full';
  const size = SOAK_SIZES[mode];
  const progress = consoleProgress('chaos');
  const cfg = loadStackConfig();
  if (cfg.temporalInMemory) throw new Error('the soak kills Temporal: run it with SQLite persistence');
  const stack = new LocalStack(cfg, progress);
  await stack.up();
  const started = Date.now();
  const result = await runSoak({
    kafkaBrokers: stack.services.kafka.address,
    temporalAddress: stack.services.temporal.address,
    namespace: cfg.namespace,
    logsDir: path.join(cfg.stateDir, 'logs'),
    services: {
      kill: async (name) => void (await stack.stopService(name, 'SIGKILL')),
      start: (name) => stack.startService(name),
    },
    ...size,
    ...(opts.dispatches ? { dispatches: opts.dispatches } : {}),
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
      `${out.dedup.dedup_409} / ${out.dedup.bound} (${out.dedup.dropped_after_admit} answers dropped after admission, ${out.dedup.answered_in_fault_windows} answers near a worker kill or Temporal outage); unexplained ${out.dedup.unexplained}`,
    ],
    [
      'DLQ copies per id',
      `max ${out.dlq_account.dlq_max_copies_per_id}, ${out.dlq_account.dlq_repeats} repeats, ${out.dlq_account.dlq_repeats_unexplained} outside a rewind`,
    ],
    ['committed offsets at the log end', String(out.committed_at_log_end)],
    [
      'DLQ records',
      `${out.dlq}, ${out.dlq_distinct_ids} distinct ids (${out.dlq_malformed_matched}/${out.malformed} malformed matched, ${out.dlq_unexpected} for valid dispatches, ${out.dlq_without_reason} without the right reason)`,
    ],
    ['left Running / group lag', `${out.executions_running} / ${out.consumer_group_lag}`],
    [
      'kills (kill -9)',
      `${out.kills.total}: ingester ${out.kills.ingester} (of ${String(out.settings.ingesters)}), worker ${out.kills.worker}, kafka ${out.kills.kafka}, temporal ${out.kills.temporal}`,
    ],
    [
      'runs API faults',
      `${out.api.unavailable_503} × 503, ${out.api.dropped} dropped sockets, ${out.api.dedup_409} × 409 dedup of ${out.api.requests} calls`,
    ],
    ['POSTs per valid dispatch', String(out.posts_per_valid_dispatch)],
    ['fault window / drain after last fault', `${out.fault_window_s} s / ${out.drain_after_last_fault_s} s`],
  ];
  process.stdout.write(`\npoimen-relay chaos soak (${mode}, seed ${out.seed}, ${out.duration_s} s)\n`);
  for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(40)} ${v}\n`);
  const dir = path.join(PACKAGE_ROOT, 'tools', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `chaos-${out.date.slice(0, 10)}${mode === 'quick' ? '-quick' : ''}.json`);
  fs.writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`\nwritten to ${path.relative(process.cwd(), file)}\n`);
  const problems = soakVerdict(result);
  if (problems.length > 0) {
    process.stderr.write(`chaos: FAILED: ${problems.join('; ')}\n`);
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
