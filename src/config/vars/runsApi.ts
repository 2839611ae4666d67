/**
 * Rows of the env table for the runs API and how its calls are retried: the URL and credentials the worker calls
 * with, the timeout of one call and the retry policy and budget (contract §5: the ingester writes them into each
 * workflow's input), and the rate limit across workers. Each row is the variable's one home (envVar.ts).
 */
import { z } from 'zod';
import { parsed, rows } from '../envVar';
import { headerToken, httpUrl, intIn, positiveRate } from '../schema';
import { caFile } from '../tls';

export const RUNS_API = rows({
  RUNS_API_URL: parsed({
    description: 'runs API base URL; the relay POSTs to /v1/runs',
    readBy: ['worker'],
    flagArg: '<url>',
    schema: httpUrl,
    default: 'http://127.0.0.1:8080',
  }),
  RUNS_API_TOKEN: parsed({
    description: 'bearer token for the runs API (never logged)',
    readBy: ['worker'],
    schema: headerToken,
  }),
  RUNS_API_CA: parsed({
    description: "PEM CA(s) of an https runs API's certificate",
    readBy: ['worker'],
    schema: caFile,
  }),
  RUNS_API_TIMEOUT_MS: parsed({
    description: 'timeout of one runs API call; travels in each workflow input',
    readBy: ['ingest'],
    schema: intIn(1, 600_000),
    default: 10_000,
  }),
  RETRY_INITIAL_INTERVAL_MS: parsed({
    description: 'first retry interval of a runs API call',
    readBy: ['ingest'],
    schema: intIn(1, 3_600_000),
    default: 1_000,
  }),
  RETRY_BACKOFF: parsed({
    description: 'retry interval multiplier',
    readBy: ['ingest'],
    schema: z
      .string()
      .regex(/^\d+(\.\d+)?$/, 'must be a number')
      .transform(Number)
      .pipe(z.number().min(1, 'must be >= 1').max(100, 'must be <= 100')),
    default: 2.0,
  }),
  RETRY_MAX_INTERVAL_MS: parsed({
    description: 'longest retry interval',
    readBy: ['ingest'],
    schema: intIn(1, 86_400_000),
    default: 5 * 60_000,
  }),
  RETRY_MAX_ATTEMPTS: parsed({
    description: 'attempts cap before a dispatch is dead-lettered (0: none, the default)',
    readBy: ['ingest'],
    schema: intIn(0, 100_000),
    default: 0,
  }),
  RETRY_MAX_DURATION_MS: parsed({
    description: "retry budget from a dispatch's first attempt (default 24 h)",
    readBy: ['ingest'],
    schema: intIn(1_000, 30 * 86_400_000),
    default: 24 * 3_600_000,
  }),
  RUNS_API_MAX_RPS: parsed({
    description: 'runs API calls per second across all workers of the task queue (unset: no cap)',
    readBy: ['worker'],
    schema: positiveRate,
  }),
});
