/** The DLQ commands' option parsers: each refuses a bad value in one line naming the flag (exit 2). */
import { ConfigError } from '../errors';

const UNIT_MS = { s: 1e3, m: 6e4, h: 3.6e6, d: 8.64e7 } as const;

export function positive(flag: string) {
  return (v: string) => {
    if (!/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0)
      throw new ConfigError(flag, `= ${JSON.stringify(v)}: must be a positive number`);
    return Number(v);
  };
}

export function parseSince(v: string): number {
  // An ISO-8601 instant, or a duration back from now: 30m, 12h, 7d.
  const rel = /^(\d+)([smhd])$/.exec(v);
  if (rel) return Date.now() - Number(rel[1]) * UNIT_MS[rel[2] as keyof typeof UNIT_MS];
  const t = Date.parse(v);
  if (Number.isNaN(t))
    throw new ConfigError(
      '--since',
      `= ${JSON.stringify(v)}: must be an ISO-8601 time or a duration like 30m, 12h, 7d`,
    );
  return t;
}

/** A duration like 30s, 15m, 1h, 7d (0 allowed), in ms. */
export function parseDuration(flag: string) {
  return (v: string): number => {
    const m = /^(\d+)([smhd])$/.exec(v);
    if (!m) throw new ConfigError(flag, `= ${JSON.stringify(v)}: must be a duration like 30s, 15m, 1h, 7d`);
    return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  };
}

export function count(flag: string) {
  return (v: string): number => {
    if (!/^[1-9]\d{0,5}$/.test(v))
      throw new ConfigError(flag, `= ${JSON.stringify(v)}: must be a whole number from 1`);
    return Number(v);
  };
}
