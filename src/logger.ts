import pino, { type Logger } from 'pino';

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
        paths: [
          'token',
          '*.token',
          'authorization',
          '*.authorization',
          'headers.authorization',
          '*.headers.authorization',
          'password',
          '*.password',
          'apiKey',
          '*.apiKey',
        ],
        censor: '<redacted>',
      },
    },
    // Synchronous: a crashed or SIGKILLed process must not take its last log lines with it.
    pino.destination({ fd: 2, sync: true }),
  );
}
