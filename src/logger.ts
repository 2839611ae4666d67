import pino, { type DestinationStream, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';
import type { LogFormat } from './config/logging';
import { LOG_REDACT_PATHS, REDACTED } from './redact';

export type { Logger, LogFormat };

/** LOG_FORMAT when set; else pretty for a person at a terminal, JSON for a collector (a file, a pipe, a pod). */
export function resolveLogFormat(configured: LogFormat | undefined, isTty: boolean): LogFormat {
  return configured ?? (isTty ? 'pretty' : 'json');
}

/** Whether the `n`th failure in a row gets a log line: the first, then every hundredth (an outage, not a flood). */
export function logsRepeat(n: number): boolean {
  return n === 1 || n % 100 === 0;
}

export interface LoggerOptions {
  /** Undefined: by whether stderr is a terminal (resolveLogFormat). */
  format?: LogFormat;
  /** Where lines go; default stderr (stdout stays free for command output such as `--json`). */
  destination?: DestinationStream | NodeJS.WritableStream;
}

/**
 * Logs on stderr, JSON or pretty, with level names as strings (`"level":"info"`, not 30) so a collector needs no
 * mapping. Authorization values never reach a log line in either format: redaction happens before formatting.
 */
export function createLogger(name: string, level: string = 'info', opts: LoggerOptions = {}): Logger {
  const format = resolveLogFormat(opts.format, process.stderr.isTTY === true);
  // Synchronous writes: a crashed or SIGKILLed process must not take its last log lines with it.
  const destination =
    format === 'pretty'
      ? pinoPretty({
          destination: opts.destination ?? 2,
          sync: true,
          colorize: !opts.destination && process.stderr.isTTY === true,
        })
      : (opts.destination ?? pino.destination({ fd: 2, sync: true }));
  return pino(
    {
      name,
      level,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: LOG_REDACT_PATHS, censor: REDACTED },
    },
    destination,
  );
}

/** What one dispatch record is known by; absent values are unknown (yet). */
export interface RecordFacts {
  tenant: string;
  dispatchKey?: string | null | undefined;
  workflowId?: string | undefined;
  /** The Temporal run of the dispatch workflow (the runs API's run id is another thing: `run_id`). */
  temporalRunId?: string | undefined;
  traceparent?: string | undefined;
}

/**
 * The fields every per-record log line carries, so one grep (or one query in a collector) follows a dispatch from
 * Kafka to the runs API: tenant, dispatch_key, workflow_id, temporal_run_id and traceparent, each when known.
 */
export function recordFields(f: RecordFacts): Record<string, string> {
  const fields: Record<string, string> = { tenant: f.tenant };
  if (f.dispatchKey != null) fields.dispatch_key = f.dispatchKey;
  if (f.workflowId) fields.workflow_id = f.workflowId;
  if (f.temporalRunId) fields.temporal_run_id = f.temporalRunId;
  if (f.traceparent) fields.traceparent = f.traceparent;
  return fields;
}
