/** `poimen-relay dlq list | replay | redrive | discard | send-test | purge-tests`: wiring only; the logic is src/ops/dlq*.ts (`dlq summary`: ./dlqSummaryCommand.ts). */
import { SingleBar } from 'cli-progress';
import { Command } from 'commander';
import { redriveCountOf } from '../contract';
import { ConfigError, EXIT } from '../errors';
import { count, parseDuration, positive } from './dlqFlags';
import { parseSince } from './dlqFlags';
import { withKafkaAdmin } from './kafkaAdmin';
import { type ReplayOptions, listDlq, parseDlqType, replayDlq } from '../ops/dlq';
import { ReplayReport } from '../ops/dlqReport';
import { parseTestCount, sendTestDeadLetters } from '../ops/dlqSendTest';
import { validateTenants } from '../ops/topics';

function age(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 120
    ? `${Math.round(s)}s`
    : s < 7200
      ? `${Math.round(s / 60)}m`
      : s < 172800
        ? `${Math.round(s / 3600)}h`
        : `${Math.round(s / 86400)}d`;
}

export function dlqCommand(): Command {
  const dlq = new Command('dlq').description(
    'dead letters: list without consuming, replay to .dispatch, discard; send and purge test dead letters',
  );
  dlq
    .command('list')
    .description(
      'show the newest dead letters of a tenant (type, reason, key, age, attempts) without consuming them; test dead letters show type "test"',
    )
    .requiredOption('--tenant <tenant>', 'tenant')
    .option('--limit <n>', 'how many (newest)', positive('--limit'), 50)
    .option('--json', 'print JSON (one array of {partition, offset, record, test})')
    .action(async (opts: { tenant: string; limit: number; json?: boolean }) => {
      validateTenants([opts.tenant]);
      const entries = await withKafkaAdmin((kafka, admin) =>
        listDlq(kafka, admin, opts.tenant, Math.floor(opts.limit)),
      );
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
        return;
      }
      for (const e of entries) {
        const r = e.record;
        if (!r) {
          process.stdout.write(`${e.partition}/${e.offset} (not a DLQ record) ${e.raw?.slice(0, 80)}\n`);
          continue;
        }
        process.stdout.write(
          `${r.id}  ${(e.test ? 'test' : r.type).padEnd(18)} key ${String(r.dispatch_key).padEnd(28)} age ${age(r.timestamp).padEnd(5)} ` +
            `attempts ${r.retry_count}${r.max_retries === null ? '' : `/${r.max_retries}`}` +
            `${redriveCountOf(r.source) > 0 ? `  redriven ${redriveCountOf(r.source)}x` : ''}  ${r.http_status ?? ''}  ${r.error}\n`,
        );
      }
      const tests = entries.filter((e) => e.test).length;
      process.stderr.write(
        `${entries.length} dead letter(s) shown${tests ? `, ${tests} of them test` : ''}\n`,
      );
    });
  dlq
    .command('replay')
    .description(
      're-publish the original dispatches to .dispatch (same dispatch_key: a succeeded dispatch is not run again); test dead letters are never replayed, only counted',
    )
    .requiredOption('--tenant <tenant>', 'tenant')
    .option('--id <id...>', 'only these DLQ record ids')
    .option(
      '--type <type>',
      'only this type (malformed_dispatch, tenant_mismatch, dispatch_failure)',
      parseDlqType,
    )
    .option('--since <when>', 'only records dead-lettered since (ISO-8601, or 30m / 12h / 7d)', parseSince)
    .option('--dry-run', 'show what would be replayed; publish and record nothing')
    .option('--rate <n>', 'at most n records per second', positive('--rate'))
    .option(
      '--force',
      'with --type malformed_dispatch or tenant_mismatch: replay them too (they will be dead-lettered again)',
    )
    .option('--from-beginning', 're-read every retained record, not only those not yet replayed')
    .option(
      '--report <file>',
      'append one JSON line per record to <file> as it goes: replayed, skipped (and why) or failed',
    )
    .option(
      '--json',
      'print the summary as JSON: {examined, replayed, wouldReplay, …, tests, records} (the only thing on stdout)',
    )
    .action(async (opts: ReplayFlags & { rate?: number; force?: boolean; fromBeginning?: boolean }) => {
      await run(opts, {
        ...(opts.rate ? { ratePerSec: opts.rate } : {}),
        force: Boolean(opts.force),
        fromBeginning: Boolean(opts.fromBeginning),
      });
    });
  dlq
    .command('redrive')
    .description(
      're-publish, as replay does, the dispatch failures that ran out of retries (never those the API refused for good) once they are --after old, each dispatch at most --max times (its redrive count travels in the poimen-redrive-count header); the rest stays pending',
    )
    .requiredOption('--tenant <tenant>', 'tenant')
    .requiredOption(
      '--after <duration>',
      'only dead letters at least this old (e.g. 1h, 30m, 0s)',
      parseDuration('--after'),
    )
    .requiredOption('--max <n>', 'redrive each dispatch at most n times', count('--max'))
    .option('--dry-run', 'show what would be redriven; publish and record nothing')
    .option('--rate <n>', 'at most n records per second', positive('--rate'))
    .option('--report <file>', 'append one JSON line per record to <file> as it goes')
    .option(
      '--json',
      'print the summary as JSON: {examined, replayed, notDue, redrivesSpent, …} (the only thing on stdout)',
    )
    .action(async (opts: ReplayFlags & { after: number; max: number; rate?: number }) => {
      await run(opts, {
        ...(opts.rate ? { ratePerSec: opts.rate } : {}),
        redrive: { afterMs: opts.after, max: opts.max, nowMs: Date.now() },
      });
    });
  dlq
    .command('discard')
    .description(
      'take dead letters out of the backlog without re-publishing them (after dealing with them otherwise); they stay readable until they expire; one of --id, --type, --since, --all is required',
    )
    .requiredOption('--tenant <tenant>', 'tenant')
    .option('--id <id...>', 'these DLQ record ids')
    .option('--type <type>', 'records of this type', parseDlqType)
    .option('--since <when>', 'records dead-lettered since (ISO-8601, or 30m / 12h / 7d)', parseSince)
    .option('--all', 'every record not yet replayed, including ones that are not DLQ records')
    .option('--dry-run', 'show what would be discarded; record nothing')
    .option(
      '--json',
      'print the summary as JSON: {examined, discarded, …, records} (the only thing on stdout)',
    )
    .action(async (opts: ReplayFlags & { all?: boolean }) => {
      if (!opts.all && !opts.id && !opts.type && opts.since === undefined)
        throw new ConfigError('--id, --type, --since or --all', 'is required: say which records to discard');
      await run(opts, { discard: { all: Boolean(opts.all) } });
    });
  dlq
    .command('send-test')
    .description(
      "publish marked test dead letters through the relay's DLQ publisher, to check the DLQ topic, the backlog gauges and their alerts end to end; never replayed; remove them with dlq purge-tests",
    )
    .requiredOption('--tenant <tenant>', 'tenant (its DLQ topic must exist)')
    .option('--count <n>', 'how many (1 to 1000)', parseTestCount, 1)
    .option('--json', 'print JSON: {topic, published, ids} (the only thing on stdout)')
    .action(async (opts: { tenant: string; count: number; json?: boolean }) => {
      validateTenants([opts.tenant]);
      const result = await withKafkaAdmin((kafka, admin, logger) =>
        sendTestDeadLetters(kafka, admin, logger, {
          tenant: opts.tenant,
          count: opts.count,
          ...(opts.json ? {} : { onSent: (id) => process.stdout.write(`sent test dead letter ${id}\n`) }),
        }),
      );
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(result)}\n`);
        return;
      }
      process.stdout.write(
        `published ${result.published} test dead letter(s) to ${result.topic}; they count in dlq_consumer_lag and ` +
          `dlq_oldest_message_age_seconds until: poimen-relay dlq purge-tests --tenant ${opts.tenant}\n`,
      );
    });
  dlq
    .command('purge-tests')
    .description(
      'take the test dead letters (dlq send-test) out of the backlog, and nothing else: real dead letters stay counted; they stay readable until they expire',
    )
    .requiredOption('--tenant <tenant>', 'tenant')
    .option('--dry-run', 'show what would be purged; record nothing')
    .option(
      '--json',
      'print the summary as JSON: {examined, discarded (the tests purged), filtered (the others), …} (the only thing on stdout)',
    )
    .action(async (opts: ReplayFlags) => {
      await run(opts, { discard: { all: false, tests: true } });
    });
  return dlq;
}

interface ReplayFlags {
  tenant: string;
  id?: string[];
  type?: ReturnType<typeof parseDlqType>;
  since?: number;
  dryRun?: boolean;
  json?: boolean;
  report?: string;
}

/** Replay or discard: progress on stderr; on stdout the records of a dry run and the summary (JSON with --json). */
async function run(opts: ReplayFlags, extra: Partial<ReplayOptions>): Promise<void> {
  validateTenants([opts.tenant]);
  const verb = extra.discard?.tests
    ? 'purge'
    : extra.discard
      ? 'discard'
      : extra.redrive
        ? 'redrive'
        : 'replay';
  const bar = new SingleBar({
    stream: process.stderr,
    format: `${verb} [{bar}] {value}/{total} examined, {done} ${verb.replace(/e$/, '')}ed`,
    noTTYOutput: true,
    notTTYSchedule: 2000,
  });
  let done = 0;
  const report = opts.report !== undefined ? ReplayReport.open(opts.report) : undefined;
  const summary = await withKafkaAdmin((kafka, admin) =>
    replayDlq(kafka, admin, {
      tenant: opts.tenant,
      ...(opts.id ? { ids: opts.id } : {}),
      ...(opts.type ? { type: opts.type } : {}),
      ...(opts.since !== undefined ? { sinceMs: opts.since } : {}),
      dryRun: Boolean(opts.dryRun),
      ...extra,
      onStart: (total) => bar.start(total, 0, { done: 0 }),
      onRecord: (outcome, entry, error) => {
        report?.record(outcome, entry, error);
        if (outcome === 'already_handled' || outcome === 'failed') return;
        if (outcome === 'replayed' || outcome === 'discarded') done++;
        const r = entry.record;
        if ((outcome === 'would_replay' || outcome === 'would_discard') && !opts.json) {
          process.stdout.write(
            `would ${verb} ${r ? `${r.id} ${entry.test ? 'test' : r.type} key ${r.dispatch_key}` : `${entry.partition}/${entry.offset} (not a DLQ record)`}\n`,
          );
        }
        bar.increment(1, { done });
      },
    }),
  ).finally(() => report?.close());
  bar.stop();
  if (summary.deferred > 0) {
    // Not a success: a scheduled run that defers would defer the same records every time, and exit 0 would hide it.
    process.exitCode = EXIT.incomplete;
    process.stderr.write(
      `poimen-relay: ${summary.deferred} record(s) left for a later run: too many records not yet replayed lie between handled ones (docs/operations.md#replay-dead-letters); replay or discard the older ones first\n`,
    );
  }
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  if (extra.discard?.tests) {
    process.stdout.write(
      `examined ${summary.examined}: ${opts.dryRun ? 'would purge' : 'purged'} ${summary.discarded} test dead letter(s); ` +
        `${summary.filtered} other record(s) left in the backlog\n`,
    );
    return;
  }
  if (extra.redrive) {
    process.stdout.write(
      `examined ${summary.examined}: ${opts.dryRun ? `would redrive ${summary.wouldReplay}` : `redriven ${summary.replayed}`}, ` +
        `not yet due ${summary.notDue ?? 0}, redrives spent ${summary.redrivesSpent ?? 0}, not redrivable ${summary.notReplayable}, ` +
        `unreadable ${summary.unreadable}${summary.alreadyHandled ? `; skipped ${summary.alreadyHandled} already handled` : ''}\n`,
    );
    return;
  }
  const outcome = extra.discard
    ? `${opts.dryRun ? 'would discard' : 'discarded'} ${summary.discarded}`
    : `${opts.dryRun ? `would replay ${summary.wouldReplay}` : `replayed ${summary.replayed}`}, not replayable without --force ${summary.notReplayable}`;
  process.stdout.write(
    `examined ${summary.examined}: ${outcome}, filtered out ${summary.filtered}, unreadable ${summary.unreadable}` +
      `${summary.tests && !extra.discard ? `; skipped ${summary.tests} test dead letter(s) (never replayed; remove them with dlq purge-tests)` : ''}` +
      `${summary.alreadyHandled ? `; skipped ${summary.alreadyHandled} already handled` : ''}\n`,
  );
}
