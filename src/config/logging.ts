import { z } from 'zod';

/** LOG_FORMAT: `json` (one object per line, for collectors) or `pretty` (pino-pretty, for a person). */
export type LogFormat = 'json' | 'pretty';

export const logFormatSchema: z.ZodType<LogFormat> = z.enum(['json', 'pretty'], {
  message: 'must be json or pretty',
});
