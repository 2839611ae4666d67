/** Parsing of single environment values: each value is checked by a schema, and a bad one throws a ConfigError
 * whose one line names the variable (a secret's value is never echoed). */
import fs from 'node:fs';
import { z } from 'zod';
import { TENANT_PATTERN } from '../contract/names';
import { ConfigError } from '../errors';
import { REDACTED, isSecretName, shownUrl } from '../redact';

export type Env = Record<string, string | undefined>;

/** One variable as a loader read it: its raw value (undefined when unset) and the value it took. */
export interface Reading {
  name: string;
  raw: string | undefined;
  value: unknown;
}

/** Who watches the reads of an environment (effective.ts), by the environment object read. */
const watchers = new WeakMap<Env, (r: Reading) => void>();

/** Calls `watch` for every variable read from `env` until the returned function is called. */
export function watchReads(env: Env, watch: (r: Reading) => void): () => void {
  watchers.set(env, watch);
  return () => watchers.delete(env);
}

export function read<T>(env: Env, name: string, schema: z.ZodType<T>, fallback: T): T;
export function read<T>(env: Env, name: string, schema: z.ZodType<T>): T | undefined;
export function read<T>(env: Env, name: string, schema: z.ZodType<T>, fallback?: T): T | undefined {
  const raw = env[name];
  const watch = watchers.get(env);
  if (raw === undefined || raw.trim() === '') {
    watch?.({ name, raw: undefined, value: fallback });
    return fallback;
  }
  const parsed = schema.safeParse(raw.trim());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // Never echo a secret's value back into a log line, nor the credentials a URL's value may carry.
    const shown = isSecretName(name) ? REDACTED : JSON.stringify(shownUrl(raw));
    throw new ConfigError(name, `= ${shown}: ${issue?.message ?? 'invalid value'}`);
  }
  watch?.({ name, raw, value: parsed.data });
  return parsed.data;
}

export const intIn = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be >= ${min}`).max(max, `must be <= ${max}`));

export const port = intIn(0, 65535);
export const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
export const hostPort = z.string().regex(/^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/, 'must be host:port');
export const nonEmpty = z.string().min(1, 'must not be empty');
// A bearer token goes into a header verbatim: a character a header cannot carry would fail every call until
// retries run out, so it is refused at start (RFC 9110 field-value: visible ASCII, space and tab inside).
export const headerToken = nonEmpty.regex(
  /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/,
  'must be printable ASCII (a header value)',
);

/** A path the process can read now, as a regular file. */
export const readableFile = nonEmpty.refine((p) => {
  try {
    return fs.statSync(p).isFile() && (fs.accessSync(p, fs.constants.R_OK), true);
  } catch {
    return false;
  }
}, 'is not a readable file');

export const regex = z.string().transform((v, ctx) => {
  try {
    return new RegExp(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'is not a valid regular expression' });
    return z.NEVER;
  }
});

export const httpUrl = z
  .string()
  .url('must be an http(s) URL')
  .refine((v) => /^https?:\/\//.test(v), 'must start with http:// or https://')
  .transform((v) => v.replace(/\/+$/, ''));

/** Calls per second: a positive decimal (Temporal's task-queue rate limit is a float). */
export const positiveRate = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a positive number')
  .transform(Number)
  .pipe(z.number().gt(0, 'must be > 0').max(1_000_000, 'must be <= 1000000'));

/**
 * Temporal's fairness weights per tenant, `acme=2,beta=0.5`: the server serves a key's backlog in proportion to its
 * weight (1 when unnamed) and clamps a weight to [0.001, 1000], so a value outside is refused rather than changed.
 */
export const tenantWeights = z.string().transform((v, ctx) => {
  const weights: Record<string, number> = {};
  for (const part of v.split(',').map((s) => s.trim())) {
    const m = /^([^=\s]+)\s*=\s*(\d+(?:\.\d+)?)$/.exec(part);
    const tenant = m?.[1];
    const weight = Number(m?.[2]);
    if (!tenant || !TENANT_PATTERN.test(tenant)) {
      ctx.addIssue({
        code: 'custom',
        message: `'${part}' is not tenant=weight with a tenant name of contract §2`,
      });
      return z.NEVER;
    }
    if (!(weight >= 0.001 && weight <= 1000)) {
      ctx.addIssue({ code: 'custom', message: `the weight of ${tenant} must be between 0.001 and 1000` });
      return z.NEVER;
    }
    if (tenant in weights) {
      ctx.addIssue({ code: 'custom', message: `${tenant} is named twice` });
      return z.NEVER;
    }
    weights[tenant] = weight;
  }
  return weights as Readonly<Record<string, number>>;
});
