import pino, { type Logger } from 'pino';
import { LOG_REDACT_PATHS, REDACTED } from './redact';

export type { Logger };

/**
 * JSON logs on stderr (stdout stays free for command output such as `--json`).
 * Authorization values never reach a log line: the redact paths cover every place one could sit.
 */
export function createLogger(name: string, level: string = 'info'): Logger {
  return pino(
    {
      name,
      level,
      redact: {
        paths: LOG_REDACT_PATHS,
        censor: REDACTED,
      },
    },
    // Synchronous: a crashed or SIGKILLed process must not take its last log lines with it.
    pino.destination({ fd: 2, sync: true }),
  );
}
