/**
 * A dead letter's source headers (contract §6), in one place: how the consumed record's headers are written into
 * `source.headers` (text) and `source.headers_base64` (values that are not UTF-8), which are left out for carrying
 * credentials (`source.headers_omitted`; the names are ../redact.ts's), how tools read them back, and the bytes
 * `dlq replay` re-publishes.
 */
import { isCredentialHeader } from '../redact';
import { base64Decode, base64Encode } from './base64';
import { type JsonObject, decodeUtf8, isJsonObject } from './json';

/**
 * How often `dlq redrive` has re-published this dispatch (contract §6): set on the record it re-publishes, so the
 * dead letter of a redriven dispatch that fails again carries it in `source.headers`, and the next redrive reads it.
 */
export const REDRIVE_COUNT_HEADER = 'poimen-redrive-count';

/**
 * The start memo field that carries a redriven dispatch's count (the ingester copies the header into it), so the
 * dead letter of a dispatch whose source record can no longer be read back keeps its count: without it, a redrive
 * would read 0 and take that dispatch again and again.
 */
export const REDRIVE_COUNT_MEMO = 'redrive_count';

/** The redrive count a dead letter's source headers carry: 0 when absent or not a count. */
export function redriveCountOf(source: Pick<SourceHeaders, 'headers'>): number {
  const value = source.headers[REDRIVE_COUNT_HEADER];
  return countOf(Array.isArray(value) ? value[value.length - 1] : value);
}

/** The redrive count a consumed record's headers carry (its last `poimen-redrive-count`): 0 when absent or not a count. */
export function recordRedriveCount(headers: RecordHeaders | undefined): number {
  const value = headers?.[REDRIVE_COUNT_HEADER];
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return countOf(last === undefined || typeof last === 'string' ? last : decodeUtf8(last));
}

/** The value of a count header or memo field: a whole number of up to six digits, else 0. */
export function countOf(value: unknown): number {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 && value < 1e6 ? value : 0;
  return typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : 0;
}

/** Kafka headers as kafkajs gives them (Buffer or string values, arrays for repeated headers). */
export type RecordHeaders = Record<string, Uint8Array | string | (Uint8Array | string)[] | undefined>;

/** Header values by name; a header given more than once keeps every value, in order. */
export type HeaderValues = Record<string, string | string[]>;

/** The header fields of a dead letter's `source`. */
export interface SourceHeaders {
  /** Every header, in order, as UTF-8 text; a header with a value that is not UTF-8 has "" for each value here. */
  headers: HeaderValues;
  /** Present only when a header had a value that is not UTF-8: that header's values (all of them), base64. */
  headers_base64?: HeaderValues;
  /** Present only when headers carrying credentials were left out: their names, in order. */
  headers_omitted?: string[];
}

const utf8 = new TextEncoder();

/** The header fields of a dead letter, from the source record's headers as consumed. */
export function sourceHeaders(headers: RecordHeaders): SourceHeaders {
  const texts: HeaderValues = {};
  const base64: HeaderValues = {};
  const omitted: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (isCredentialHeader(name)) {
      omitted.push(name);
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    const decoded = values.map((v) => (typeof v === 'string' ? v : decodeUtf8(v, true)));
    const shaped = (each: string[]) => (Array.isArray(value) ? each : each[0]!);
    if (decoded.every((t): t is string => t !== undefined)) {
      texts[name] = shaped(decoded);
      continue;
    }
    // The name keeps its place among the text headers (readers of text only see it, empty); the bytes of all
    // its values are kept beside, so a replay re-publishes the header as it was, value for value.
    texts[name] = shaped(values.map(() => ''));
    base64[name] = shaped(values.map((v) => base64Encode(typeof v === 'string' ? utf8.encode(v) : v)));
  }
  return headerFields(texts, base64, omitted);
}

function headerFields(texts: HeaderValues, base64: HeaderValues, omitted: string[]): SourceHeaders {
  return {
    headers: texts,
    ...(Object.keys(base64).length > 0 ? { headers_base64: base64 } : {}),
    ...(omitted.length > 0 ? { headers_omitted: omitted } : {}),
  };
}

/**
 * The header fields of a dead letter as tools read them: loose, as the rest of the reader. Records written
 * before headers were kept have none; values of another type, and base64 that is not valid, are left out. A
 * credential header in a dead letter written without these rules is left out too (and named in
 * `headers_omitted`): no tool shows it, no replay re-publishes it.
 */
export function sourceHeadersFromObject(source: JsonObject): SourceHeaders {
  const listed = source['headers_omitted'];
  const omitted = Array.isArray(listed) ? listed.filter((n): n is string => typeof n === 'string') : [];
  const texts = headerValues(source['headers'], () => true, omitted);
  const base64 = headerValues(source['headers_base64'], (v) => base64Decode(v) !== undefined, omitted);
  return headerFields(texts, base64, omitted);
}

function headerValues(value: unknown, valid: (v: string) => boolean, omitted: string[]): HeaderValues {
  const out: HeaderValues = {};
  if (!isJsonObject(value)) return out;
  for (const [name, v] of Object.entries(value)) {
    if (isCredentialHeader(name)) {
      if (!omitted.includes(name)) omitted.push(name);
      continue;
    }
    if (typeof v === 'string' && valid(v)) out[name] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string' && valid(x))) out[name] = v as string[];
  }
  return out;
}

/** The source record's headers as bytes, for `dlq replay`: in their order, each value as it was consumed. */
export function sourceHeaderBytes(source: SourceHeaders): Record<string, Buffer | Buffer[]> {
  const base64 = source.headers_base64 ?? {};
  const out: Record<string, Buffer | Buffer[]> = {};
  for (const name of new Set([...Object.keys(source.headers), ...Object.keys(base64)])) {
    const encoded = base64[name];
    const value =
      encoded !== undefined
        ? mapValues(encoded, (v) => Buffer.from(base64Decode(v) ?? new Uint8Array()))
        : mapValues(source.headers[name]!, (v) => Buffer.from(v, 'utf8'));
    out[name] = value;
  }
  return out;
}

function mapValues(value: string | string[], f: (v: string) => Buffer): Buffer | Buffer[] {
  return Array.isArray(value) ? value.map(f) : f(value);
}
