/** `poimen-relay dlq summary`: wiring and the table; the grouping is src/ops/dlqSummary.ts. */
import { Command } from 'commander';
import { topics } from '../contract';
import { type DlqSummary, summarizeDlq } from '../ops/dlqSummary';
import { validateTenants } from '../ops/topics';
import { printable } from '../printable';
import { parseSince } from './dlqFlags';
import { withKafkaAdmin } from './kafkaAdmin';

const COLUMNS = [
  'COUNT',
  'TENANT',
  'TYPE',
  'STATUS',
  'WORKFLOW_REF',
  'FIRST',
  'LAST',
  'EXAMPLE_ID',
  'ERROR_CLASS',
];

/** The summary as an aligned table, one group a line, the error class last (it is the longest). */
export function summaryTable(summary: DlqSummary): string {
  const rows = summary.groups.map((g) => [
    String(g.count),
    g.tenant,
    g.type,
    g.http_status === null ? '-' : String(g.http_status),
    printable(g.workflow_ref ?? '-'),
    g.first,
    g.last,
    g.example_id ?? '-',
    printable(g.error_class ?? '(not a DLQ record)'),
  ]);
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padStart(widths[i]!) : i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ');
  return [line(COLUMNS), ...rows.map(line)].join('\n') + '\n';
}

/** The one stderr line naming the DLQ topics deleted while the summary ran (not a failure: the others are read). */
export function vanishedLine(summary: Pick<DlqSummary, 'vanished'>): string | undefined {
  if (summary.vanished.length === 0) return undefined;
  const names = summary.vanished.map((t) => topics.dlq(t)).join(', ');
  return `poimen-relay: not summarised, DLQ topic deleted while the summary ran: ${names}\n`;
}

export function dlqSummaryCommand(): Command {
  return new Command('summary')
    .description(
      'what failed, at a glance: dead letters grouped by type, error class, HTTP status and workflow_ref, with counts, first and last time and an example id (no payloads); reads without consuming; every tenant without --tenant',
    )
    .option('--tenant <tenant>', 'only this tenant (default: every tenant with a DLQ topic)')
    .option('--since <when>', 'only records dead-lettered since (ISO-8601, or 30m / 12h / 7d)', parseSince)
    .option(
      '--json',
      'print JSON: {since, tenants, vanished, total, groups: [{tenant, type, error_class, http_status, workflow_ref, count, first, last, example_id}]} (the only thing on stdout)',
    )
    .action(async (opts: { tenant?: string; since?: number; json?: boolean }) => {
      if (opts.tenant !== undefined) validateTenants([opts.tenant]);
      const summary = await withKafkaAdmin((kafka, admin) =>
        summarizeDlq(kafka, admin, {
          ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
          ...(opts.since !== undefined ? { sinceMs: opts.since } : {}),
        }),
      );
      const vanished = vanishedLine(summary);
      if (vanished) process.stderr.write(vanished);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(summary)}\n`);
        return;
      }
      if (summary.groups.length > 0) process.stdout.write(summaryTable(summary));
      process.stderr.write(
        `${summary.total} dead letter(s) in ${summary.groups.length} group(s), ${summary.tenants.length} tenant(s)` +
          `${summary.since ? ` since ${summary.since}` : ''}\n`,
      );
    });
}
