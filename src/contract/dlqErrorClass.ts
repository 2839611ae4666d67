/**
 * The class of a dead letter's `error` (contract §6): the reason with what varies from record to record taken
 * out, so dead letters that failed the same way fall into one group. `dlq summary` groups by it, and the
 * `error_class` label of `dlq_messages_sent_total` carries it. Its values come from the reasons the relay writes
 * (the runs-API classifier's, ../activities/classify.ts, and the dispatch validator's, ./dispatch.ts), so they
 * form a bounded set: a status code, a transport error code, a validation rule — never a body, a value, an id.
 * Pure: no I/O.
 */

/** Longest class kept: longer reasons are cut (a label value stays short). */
export const ERROR_CLASS_MAX_CHARS = 80;

/** The class of a dead letter's `error` text. */
export function dlqErrorClass(error: string): string {
  // A dispatch failure says how its retries ended, then `last: <the classifier's reason>`: that reason is the class.
  const last = error.indexOf('; last: ');
  let reason = last >= 0 ? error.slice(last + '; last: '.length) : error;
  // Notes the relay appends about the payload (rebuilt, omitted) say nothing about why the dispatch failed.
  const note = reason.indexOf(' [payload ');
  if (note >= 0) reason = reason.slice(0, note);
  reason = reason.trim();

  const answered = /^runs API answered (\d{3})\b/.exec(reason);
  if (answered) return `runs API answered ${answered[1]}`;
  const failed = /^runs API request failed: (no error code|[^\s(]+)/.exec(reason);
  if (failed) return `runs API request failed: ${failed[1]}`;
  if (reason.startsWith('runs API unavailable (circuit breaker open'))
    return 'runs API unavailable (circuit breaker open)';

  // Anything else (the validator's rules, timeouts): the words before the detail, with values taken out.
  const colon = reason.indexOf(': ');
  const head = colon > 0 ? reason.slice(0, colon) : reason;
  const cls = head
    .replace(/"(?:[^"\\]|\\.)*"/g, '"…"')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
    .replace(/\\u[0-9a-f]{4}/gi, '\\uXXXX')
    .replace(/(?<![\w.-])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w])/gi, 'N')
    .replace(/\s+/g, ' ')
    .trim();
  if (cls === '') return 'unknown';
  return cls.length > ERROR_CLASS_MAX_CHARS ? `${cls.slice(0, ERROR_CLASS_MAX_CHARS - 1)}…` : cls;
}
