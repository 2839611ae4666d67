/**
 * Rows of the env table for the process itself: the port its metrics and health endpoints listen on, its logs, and
 * how long a one-shot command waits for Kafka or Temporal. Each row is the variable's one home (envVar.ts).
 */
import { z } from 'zod';
import { RELAY, parsed, perRole, rows } from '../envVar';
import { logFormatSchema } from '../logging';
import { intIn, port } from '../schema';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const PROCESS = rows({
  METRICS_PORT: parsed({
    description: 'port of /metrics, /healthz and /readyz',
    readBy: RELAY,
    flagArg: '<port>',
    schema: port,
    // 0: a one-shot command serves none.
    default: perRole({ ingester: 9464, worker: 9465, cli: 0 }),
  }),
  LOG_FORMAT: parsed({
    description: 'json or pretty; unset: pretty when stderr is a terminal, else JSON',
    readBy: [...RELAY, 'kafka-cli'],
    schema: logFormatSchema,
  }),
  LOG_LEVEL: parsed({
    description: 'trace, debug, info, warn, error, fatal or silent',
    readBy: [...RELAY, 'kafka-cli'],
    flagArg: '<level>',
    schema: z.enum(LOG_LEVELS, {
      message: 'must be one of trace, debug, info, warn, error, fatal, silent',
    }),
    default: 'info',
  }),
  POIMEN_CLI_CONNECT_TIMEOUT_MS: parsed({
    description: 'how long a one-shot command waits for a first answer before exit 4',
    readBy: ['kafka-cli', 'temporal-cli'],
    schema: intIn(100, 600_000),
    default: 5_000,
  }),
});
