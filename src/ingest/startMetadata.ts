/**
 * What the Temporal Web UI shows for each dispatch execution (user metadata, set at start): a one-line summary and
 * details on the execution page saying where the record came from and what the relay does with it. Cosmetic, so
 * it never throws (a start must not stall its partition over it), and built from producer text, so each such
 * value is flattened to one line without the characters that make Markdown links, code, HTML or invisible
 * reordering, and cut to a bounded size on a character boundary (the UI URL-encodes the Markdown it renders, which
 * a lone surrogate would break).
 */
import { topics } from '../contract/names';
import { printable, utf8Head } from '../printable';
import type { DispatchInput } from '../contract/workflow';

/** The server's limit for a summary is 400 bytes (`limit.userMetadataSummarySize`); this leaves room. */
const SUMMARY_MAX_BYTES = 300;
/** A producer-supplied value in the details. */
const VALUE_MAX_BYTES = 240;
/** A dispatch_key is at most 256 characters: never cut, only cleaned. */
const KEY_MAX_BYTES = 1024;
/** The latest and earliest times a JavaScript Date holds. */
const MAX_DATE_MS = 8.64e15;

/**
 * One line of plain text: control characters, format characters (bidi overrides, zero-width) and Markdown's link,
 * code and HTML characters become spaces; at most `maxBytes`.
 */
export function plainText(value: string, maxBytes = VALUE_MAX_BYTES): string {
  // Cut before cleaning: a goal_id may be megabytes, and cleaning is per character.
  const head = utf8Head(value, maxBytes * 4);
  const flat = printable(head)
    .replace(/[\p{Cf}`[\]<>()\\]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return utf8Head(flat, maxBytes);
}

/** `acme · onboarding@v3 · d-0001`: tenant, workflow_ref, dispatch_key, within the summary's size. */
export function dispatchSummary(input: DispatchInput): string {
  const tenant = input.tenant;
  const key = plainText(input.dispatch.dispatch_key, KEY_MAX_BYTES);
  const room = SUMMARY_MAX_BYTES - Buffer.byteLength(`${tenant} ·  · ${key}`);
  const ref = plainText(input.dispatch.workflow_ref, Math.max(8, room));
  return utf8Head(`${tenant} · ${ref} · ${key}`, SUMMARY_MAX_BYTES);
}

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

function recordTime(timestamp: string): string {
  const ms = Number(timestamp);
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS ? `, written ${new Date(ms).toISOString()}` : '';
}

export function dispatchDetails(input: DispatchInput): string {
  const { tenant, dispatch, source, policy } = input;
  const key = plainText(dispatch.dispatch_key, KEY_MAX_BYTES);
  // The command is shown only when the key reads as it was produced (nothing cleaned out of it).
  const command =
    key === dispatch.dispatch_key
      ? `poimen-relay dispatch status --tenant ${tenant} --key ${key}`
      : `poimen-relay dispatch status --tenant ${tenant} --key with the dispatch_key as produced`;
  const goal = dispatch.goal_id === null ? 'no goal' : `goal ${plainText(dispatch.goal_id)}`;
  const retries =
    policy?.maxDurationMs !== undefined
      ? `retrying for up to ${duration(policy.maxDurationMs)} from the first attempt${policy.attemptCap ? ` or ${policy.attemptCap} attempts` : ''}`
      : `retrying up to ${policy?.maxAttempts ?? 10} attempts`;
  return [
    `**Source record**: ${source.topic} partition ${source.partition} offset ${source.offset}${recordTime(source.timestamp)}`,
    `**What the relay does**: POST /v1/runs for workflow ${plainText(dispatch.workflow_ref)} (${goal}) with` +
      ` idempotency key ${key}, ${retries}. If the runs API refuses it for good or the retries run out, a dead` +
      ` letter goes to ${topics.dlq(tenant)} and this execution ends Failed.`,
    `**Attempts**: the pending activity's heartbeat details list every attempt so far (${command}).`,
  ].join('\n\n');
}
