/** `poimen-relay dlq list | replay`: wiring only; the logic is src/ops/dlq.ts. */
import { SingleBar } from 'cli-progress';
import { Command } from 'commander';
import { ConfigError } from '../errors';
import { withKafkaAdmin } from './kafkaAdmin';
import { listDlq, parseDlqType, replayDlq } from '../ops/dlq';
import { validateTenants } from '../ops/topics';

function positive(flag: string) {
  return (v: string) => {
    if (!/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0)
      throw new ConfigError(flag, `= ${JSON.stringify(v)}: must be a positive number`);
    return Number(v);
  };
}

function parseSince(v: string): number {
  // An ISO-8601 instant, or a duration back from now: 30m, 12h, 7d.
  const rel = /^(\d+)([smhd])$/.exec(v);
  if (rel)
    return (
      Date.now() - Number(rel[1]) * { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 }[rel[2] as 's' | 'm' | 'h' | 'd']
    );
  const t = Date.parse(v);
  if (Number.isNaN(t))
    throw new ConfigError(
      '--since',
      `= ${JSON.stringify(v)}: must be an ISO-8601 time or a duration like 30m, 12h, 7d`,
    );
  return t;
}

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
  const dlq = new Command('dlq').description('dead letters: list without consuming, replay to .dispatch');
  dlq
    .command('list')
    .description(
      'show the newest dead letters of a tenant (type, reason, key, age, attempts) without consuming them',
    )
    .requiredOption('--tenant <tenant>', 'tenant')
    .option('--limit <n>', 'how many (newest)', positive('--limit'), 50)
    .option('--json', 'print JSON (one array of {partition, offset, record})')
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
          `${r.id}  ${r.type.padEnd(18)} key ${String(r.dispatch_key).padEnd(28)} age ${age(r.timestamp).padEnd(5)} ` +
            `attempts ${r.retry_count}/${r.max_retries}  ${r.http_status ?? ''}  ${r.error}\n`,
        );
      }
      process.stderr.write(`${entries.length} dead letter(s) shown\n`);
    });
  dlq
    .command('replay')
    .description(
      're-publish the original dispatches to .dispatch (same dispatch_key: a succeeded dispatch is not run again)',
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
    .option('--from-beginning', 're-read every retained record, not only those past the recorded progress')
    .option('--json', 'print the summary as JSON')
    .action(
      async (opts: {
        tenant: string;
        id?: string[];
        type?: ReturnType<typeof parseDlqType>;
        since?: number;
        dryRun?: boolean;
        rate?: number;
        force?: boolean;
        fromBeginning?: boolean;
        json?: boolean;
      }) => {
        validateTenants([opts.tenant]);
        const bar = new SingleBar({
          stream: process.stderr,
          format: 'replay [{bar}] {value}/{total} examined, {replayed} replayed',
          noTTYOutput: true,
          notTTYSchedule: 2000,
        });
        let replayed = 0;
        const summary = await withKafkaAdmin((kafka, admin) =>
          replayDlq(kafka, admin, {
            tenant: opts.tenant,
            ...(opts.id ? { ids: opts.id } : {}),
            ...(opts.type ? { type: opts.type } : {}),
            ...(opts.since !== undefined ? { sinceMs: opts.since } : {}),
            ...(opts.rate ? { ratePerSec: opts.rate } : {}),
            dryRun: Boolean(opts.dryRun),
            force: Boolean(opts.force),
            fromBeginning: Boolean(opts.fromBeginning),
            onStart: (total) => bar.start(total, 0, { replayed: 0 }),
            onRecord: (outcome, entry) => {
              if (outcome === 'replayed') replayed++;
              if (outcome === 'would_replay' && entry.record) {
                process.stdout.write(
                  `would replay ${entry.record.id} ${entry.record.type} key ${entry.record.dispatch_key}\n`,
                );
              }
              bar.increment(1, { replayed });
            },
          }),
        );
        bar.stop();
        if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
        else {
          process.stdout.write(
            `examined ${summary.examined}: ${opts.dryRun ? `would replay ${summary.wouldReplay}` : `replayed ${summary.replayed}`}, ` +
              `filtered out ${summary.filtered}, not replayable without --force ${summary.notReplayable}, unreadable ${summary.unreadable}\n`,
          );
        }
      },
    );
  return dlq;
}
