/**
 * The receipt of a `dlq replay --report <file>` (docs/cli.md): one JSON line per record the replay reads, written
 * as it goes — appended with one write each, right after the record's fate is known (for a replayed record: once
 * Kafka acknowledged it), so the file of a replay killed part-way ends at the last record it dealt with, and a run
 * resumed with the same file appends to it.
 */
import fs from 'node:fs';
import { ConfigError } from '../errors';
import type { ReplayOutcome } from './dlq';
import type { DlqEntry } from './dlqList';

/** What became of a record: `reason` says why it was skipped, `error` why it failed. */
export interface ReportLine {
  /** When the line was written (ISO-8601). */
  at: string;
  outcome: 'replayed' | 'would_replay' | 'skipped' | 'failed';
  /** For `skipped`: filtered, not_replayable, unreadable, test, deferred, already_handled. */
  reason?: string;
  /** For `failed`: the error, one line. */
  error?: string;
  partition: number;
  offset: string;
  /** The DLQ record's id, type and dispatch key; null when the record is not a DLQ record. */
  id: string | null;
  type: string | null;
  dispatch_key: string | null;
}

/** The report line of one outcome; undefined for outcomes a replay never reports (discard's). */
export function reportLine(outcome: ReplayOutcome, entry: DlqEntry, error?: unknown): ReportLine | undefined {
  const r = entry.record;
  const base = {
    partition: entry.partition,
    offset: entry.offset,
    id: r?.id ?? null,
    type: r ? (entry.test ? 'test' : r.type) : null,
    dispatch_key: r?.dispatch_key ?? null,
  };
  const at = new Date().toISOString();
  switch (outcome) {
    case 'replayed':
    case 'would_replay':
      return { at, outcome, ...base };
    case 'failed':
      return { at, outcome, error: oneLine(error), ...base };
    case 'filtered':
    case 'not_replayable':
    case 'unreadable':
    case 'test':
    case 'deferred':
    case 'already_handled':
    case 'not_due':
    case 'redrives_spent':
      return { at, outcome: 'skipped', reason: outcome, ...base };
    default:
      return undefined;
  }
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
}

function why(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : oneLine(err);
}

/**
 * An open report file; each line goes to the file in one write (no buffering in this process). A line that cannot
 * be written is a usage error naming the file and the record: the replay stops there (./dlq.ts sends nothing more),
 * so at most that one record was sent without a line.
 */
export class ReplayReport {
  private constructor(
    private readonly file: string,
    private readonly fd: number,
  ) {}

  /** Opens `file` for appending (created if missing); a path that cannot be written is a usage error. */
  static open(file: string): ReplayReport {
    try {
      return new ReplayReport(file, fs.openSync(file, 'a'));
    } catch (err) {
      throw new ConfigError('--report', `= ${JSON.stringify(file)}: cannot be written (${why(err)})`);
    }
  }

  record(outcome: ReplayOutcome, entry: DlqEntry, error?: unknown): void {
    const line = reportLine(outcome, entry, error);
    if (!line) return;
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
    try {
      // A short write (the disk filling up mid-line) is continued; the next write then fails with the reason.
      for (let done = 0; done < bytes.length;) {
        const n = fs.writeSync(this.fd, bytes, done);
        if (n <= 0) throw new Error('nothing written');
        done += n;
      }
    } catch (err) {
      const at = `partition ${entry.partition} offset ${entry.offset}`;
      throw new ConfigError(
        '--report',
        `= ${JSON.stringify(this.file)}: cannot be written (${why(err)}); the replay stopped at ${at}` +
          (outcome === 'replayed'
            ? `, record ${line.id} replayed but not in the report`
            : ` (${line.reason ?? line.outcome}), not in the report`) +
          '; nothing more was sent',
      );
    }
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}
