/**
 * What an answer of `POST /v1/runs` means for the relay (contract §5). Pure: the activity does the I/O and hands
 * the status, headers and body (or the transport error code) here, so every row of the table is unit-testable.
 */
import { redactBearer } from '../redact';

export type RunsApiAnswer =
  | {
      kind: 'response';
      status: number;
      headers: Record<string, string | string[] | undefined>;
      body: string;
      /** The clock an HTTP-date Retry-After is measured against. */
      nowMs: number;
    }
  | { kind: 'error'; code: string | undefined };

export type Classification =
  | { outcome: 'success'; admission: 'created' | 'existing'; runId: string | null }
  | { outcome: 'retryable'; reason: string; httpStatus: number | null; retryAfterMs?: number }
  | { outcome: 'fatal'; reason: string; httpStatus: number };

const CREATED_STATUSES = new Set([200, 201, 202]);
const RETRYABLE_4XX = new Set([408, 425, 429]);
// Credentials are fixed by operators, not by dead-lettering every dispatch while a token is being rotated.
const AUTH_STATUSES = new Set([401, 403]);

/**
 * Whether an answer of this status is retried (contract §5): 5xx, 408, 425, 429, and 401/403. A dead letter whose
 * last answer was one of these ran out of retries rather than being refused, so `dlq redrive` may try it again.
 */
export function retryableStatus(status: number): boolean {
  return RETRYABLE_4XX.has(status) || AUTH_STATUSES.has(status) || (status >= 500 && status <= 599);
}

export function classifyRunsApiAnswer(answer: RunsApiAnswer): Classification {
  if (answer.kind === 'error') return classifyTransportError(answer.code);
  const { status, body } = answer;
  if (CREATED_STATUSES.has(status)) return { outcome: 'success', admission: 'created', runId: runIdOf(body) };
  if (status === 409) return { outcome: 'success', admission: 'existing', runId: runIdOf(body) };
  if (retryableStatus(status)) {
    const retryAfterMs = parseRetryAfter(headerValue(answer.headers, 'retry-after'), answer.nowMs);
    return {
      outcome: 'retryable',
      reason: answeredReason(status, body),
      httpStatus: status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  if (status >= 400 && status <= 499) {
    return { outcome: 'fatal', reason: answeredReason(status, body), httpStatus: status };
  }
  // 1xx, 3xx and 2xx codes outside the contract: redirects are not followed and the same request will get
  // the same answer, so retrying only delays the dead letter. Dead-lettering is safe: a replay is absorbed by
  // the API's dispatch_key admission dedup if the request had in fact been admitted.
  const location = headerValue(answer.headers, 'location');
  const detail = location === undefined ? 'unexpected status' : `unexpected status, location ${location}`;
  return { outcome: 'fatal', reason: answeredReason(status, body, detail), httpStatus: status };
}

/** `run_id` of a JSON body; null when the body is not JSON or has no string run_id (still a success). */
function runIdOf(body: string): string | null {
  try {
    const json: unknown = JSON.parse(body);
    if (typeof json === 'object' && json !== null && !Array.isArray(json)) {
      const runId = (json as Record<string, unknown>)['run_id'];
      return typeof runId === 'string' ? runId : null;
    }
  } catch {
    // A success without a parseable body is still a success: the API admitted the run.
  }
  return null;
}

function answeredReason(status: number, body: string, detail?: string): string {
  const excerpt = bodyExcerpt(body);
  const head =
    detail === undefined ? `runs API answered ${status}` : `runs API answered ${status} (${detail})`;
  return excerpt === '' ? head : `${head}: ${excerpt}`;
}

const TRANSPORT_ERRORS: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for response headers',
  UND_ERR_BODY_TIMEOUT: 'timed out reading the response body',
  UND_ERR_SOCKET: 'socket error',
  UND_ERR_CLOSED: 'connection closed',
  UND_ERR_ABORTED: 'request aborted (attempt timeout)',
  ABORT_ERR: 'request aborted (attempt timeout)',
  AbortError: 'request aborted (attempt timeout)',
  TimeoutError: 'attempt timeout',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'broken pipe',
  ETIMEDOUT: 'connection timed out',
  EAI_AGAIN: 'DNS lookup failed temporarily',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** Transport errors of a call that never reached the API: no connection was made (nothing listened, no route, no name). */
const UNREACHED_CODES = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** True when the answer is a transport error of a call that never reached the API. */
export function neverReachedApi(answer: RunsApiAnswer): boolean {
  return answer.kind === 'error' && answer.code !== undefined && UNREACHED_CODES.has(answer.code);
}

/**
 * Transport errors are classified by code only (messages change between library versions and locales), and
 * all of them are retryable: a network problem is never the dispatch's fault, and once retries run out the
 * dispatch is dead-lettered anyway. Known codes only get a friendlier reason.
 */
function classifyTransportError(code: string | undefined): Classification {
  const what =
    code === undefined
      ? 'no error code'
      : Object.hasOwn(TRANSPORT_ERRORS, code)
        ? `${code} (${TRANSPORT_ERRORS[code]})`
        : code;
  return { outcome: 'retryable', reason: `runs API request failed: ${what}`, httpStatus: null };
}

function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Retry-After (RFC 9110 §10.2.3): delta-seconds or an HTTP-date in any of its three accepted formats.
// ---------------------------------------------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`,
);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * Milliseconds to wait before the next attempt; past dates give 0; undefined when absent or invalid. No cap
 * here: the caller bounds it by the retry policy's maximum interval.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  const dateMs = parseHttpDate(text, nowMs);
  return dateMs === undefined ? undefined : Math.max(0, dateMs - nowMs);
}

// Date.parse is not used: it accepts almost anything ("1" is the year 2001), which would turn garbage
// headers into real delays.
function parseHttpDate(text: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2], m[1], m[4], m[5], m[6]);
  m = RFC850_DATE.exec(text);
  if (m) return utc(rfc850Year(Number(m[3]), nowMs), m[2], m[1], m[4], m[5], m[6]);
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1], m[2], m[3], m[4], m[5]);
  return undefined;
}

/** RFC 9110: a two-digit year more than 50 years in the future means the most recent past such year. */
function rfc850Year(twoDigits: number, nowMs: number): number {
  const currentYear = new Date(nowMs).getUTCFullYear();
  let year = Math.floor(currentYear / 100) * 100 + twoDigits;
  if (year > currentYear + 50) year -= 100;
  return year;
}

function utc(
  year: number,
  monthName: string | undefined,
  dayText: string | undefined,
  hourText: string | undefined,
  minuteText: string | undefined,
  secondText: string | undefined,
): number | undefined {
  const month = MONTHS.indexOf(monthName ?? '');
  const [day, hour, minute, second] = [dayText, hourText, minuteText, secondText].map((t) =>
    Number(t?.trim()),
  );
  if (month < 0 || day === undefined || hour === undefined || minute === undefined || second === undefined) {
    return undefined;
  }
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const ms = Date.UTC(year, month, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls "Feb 30" into March; an impossible date is an invalid header, not a delay.
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Body excerpts for failure reasons
// ---------------------------------------------------------------------------------------------------------

/**
 * The first `max` characters of a response body with whitespace collapsed, for reasons that end up in DLQ
 * records and logs. Bearer tokens are masked in case an API echoes the request headers back.
 */
export function bodyExcerpt(body: string, max = 200): string {
  let out = '';
  let chars = 0;
  let pendingSpace = false;
  // Iterate by code point and stop early: bodies can be megabytes, and a surrogate pair must not be split.
  for (const ch of body) {
    if (/\s/.test(ch)) {
      pendingSpace = chars > 0;
      continue;
    }
    const piece = pendingSpace ? ` ${ch}` : ch;
    const pieceChars = pendingSpace ? 2 : 1;
    if (chars + pieceChars > max) return redactBearer(`${out}…`);
    out += piece;
    chars += pieceChars;
    pendingSpace = false;
  }
  return redactBearer(out);
}
