/**
 * The attempt history of a dispatch (contract §6 `attempts`): one entry per runs-API attempt, oldest first, each
 * error an excerpt of at most 512 bytes; past 50 attempts the first 10 and the last 40 are kept and
 * `attempts_omitted` counts the rest. Pure: the worker carries it from attempt to attempt, the dead letter and
 * `dispatch status` show it.
 */

import { utf8Head } from '../printable';

export interface AttemptEntry {
  /** The activity attempt number, from 1: the same count as the dead letter's `retry_count`. */
  attempt: number;
  /** When the attempt began (ISO-8601); null when nothing recorded it (see NO_OUTCOME). */
  at: string | null;
  /** The API's answer; null for a transport error, a timeout, or an attempt that made no call. */
  http_status: number | null;
  /** Why it failed (redacted, at most 512 bytes); null for the attempt that succeeded. */
  error: string | null;
  duration_ms: number | null;
}

export interface AttemptHistory {
  attempts: AttemptEntry[];
  /** How many attempts between the first 10 and the last 40 are left out; 0 when none are. */
  attempts_omitted: number;
}

export const ATTEMPTS_KEPT_FIRST = 10;
export const ATTEMPTS_KEPT_LAST = 40;
export const ATTEMPT_ERROR_MAX_BYTES = 512;

/**
 * The entry of an attempt whose outcome no record holds: its worker was killed (or lost its connection) before it
 * reported, it ran past its timeout, or a worker of an earlier version made it (its heartbeats carry no history,
 * and erase what was there). A first attempt records nothing before its outcome (a heartbeat there would cost
 * every dispatch a write to Temporal), so its start time is unknown too.
 */
export const NO_OUTCOME =
  'no outcome recorded: the attempt ended without reporting (worker lost, timed out, or an earlier version)';

export const emptyHistory = (): AttemptHistory => ({ attempts: [], attempts_omitted: 0 });

/**
 * What a `postRun` attempt heartbeats (besides the breaker's state): the history so far and, while the attempt has
 * no outcome yet, the attempt itself, which a worker lost mid-call leaves behind.
 */
export interface AttemptBeat extends AttemptHistory {
  current?: { attempt: number; at: string };
}

/**
 * The history a heartbeat carried (or a timeout reported), with the attempt it was written during marked as
 * NO_OUTCOME when that attempt is older than `before` and has no entry of its own.
 */
export function historyOfBeat(beat: unknown, before: number): AttemptHistory | undefined {
  const history = historyFrom(beat);
  const current = (beat as Partial<AttemptBeat> | undefined)?.current;
  if (!current || typeof current.attempt !== 'number' || current.attempt >= before) return history;
  if (history?.attempts.some((a) => a.attempt === current.attempt)) return history;
  return withAttempt(history ?? emptyHistory(), {
    attempt: current.attempt,
    at: typeof current.at === 'string' ? current.at : null,
    http_status: null,
    error: NO_OUTCOME,
    duration_ms: null,
  });
}

/** The attempts a history stands for: its kept entries and the ones it counts as left out. */
export function attemptsMade(h: AttemptHistory): number {
  return Math.max(h.attempts.length + h.attempts_omitted, ...h.attempts.map((a) => a.attempt));
}

/**
 * Histories of the same call read from several places, as one: an entry with an outcome wins over NO_OUTCOME, and
 * what the cap leaves out is counted once (attempts made less the entries kept), not once per source.
 */
export function mergedHistory(...histories: (AttemptHistory | undefined)[]): AttemptHistory | undefined {
  const known = histories.filter((h): h is AttemptHistory => h !== undefined);
  if (known.length === 0) return undefined;
  const byAttempt = new Map<number, AttemptEntry>();
  for (const h of known) {
    for (const e of h.attempts) {
      const had = byAttempt.get(e.attempt);
      if (!had || (had.error === NO_OUTCOME && e.error !== NO_OUTCOME)) byAttempt.set(e.attempt, e);
    }
  }
  let out = emptyHistory();
  for (const e of [...byAttempt.values()].sort((a, b) => a.attempt - b.attempt)) out = withAttempt(out, e);
  const made = Math.max(...known.map(attemptsMade));
  return { attempts: out.attempts, attempts_omitted: Math.max(0, made - out.attempts.length) };
}

/** `history` with `entry` appended (or replacing the entry of the same attempt), capped as the contract says. */
export function withAttempt(history: AttemptHistory, entry: AttemptEntry): AttemptHistory {
  const attempts = history.attempts.filter((a) => a.attempt !== entry.attempt);
  attempts.push(entry);
  attempts.sort((a, b) => a.attempt - b.attempt);
  let omitted = history.attempts_omitted;
  while (attempts.length > ATTEMPTS_KEPT_FIRST + ATTEMPTS_KEPT_LAST) {
    attempts.splice(ATTEMPTS_KEPT_FIRST, 1);
    omitted++;
  }
  return { attempts, attempts_omitted: omitted };
}

/**
 * `history` completed up to attempt `through`: every attempt number the record should hold and does not (kept,
 * or counted as omitted) gets a NO_OUTCOME entry, so the list always accounts for every attempt made.
 */
export function throughAttempt(history: AttemptHistory, through: number): AttemptHistory {
  let out = history;
  const kept = new Set(history.attempts.map((a) => a.attempt));
  const last = Math.max(0, ...kept);
  for (let n = 1; n <= through; n++) {
    if (kept.has(n)) continue;
    // Numbers between the first ten and the newest kept entry were left out by the cap, not lost.
    if (history.attempts_omitted > 0 && n > ATTEMPTS_KEPT_FIRST && n < last) continue;
    out = withAttempt(out, { attempt: n, at: null, http_status: null, error: NO_OUTCOME, duration_ms: null });
  }
  return out;
}

/** At most ATTEMPT_ERROR_MAX_BYTES of UTF-8, cut on a character boundary. */
export function attemptError(text: string): string {
  return utf8Head(text, ATTEMPT_ERROR_MAX_BYTES);
}

/** A history read back from JSON written by any version (loose: what is not an entry is dropped). */
export function historyFrom(value: unknown): AttemptHistory | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const { attempts, attempts_omitted } = value as { attempts?: unknown; attempts_omitted?: unknown };
  if (!Array.isArray(attempts)) return undefined;
  const omitted =
    typeof attempts_omitted === 'number' && Number.isSafeInteger(attempts_omitted) && attempts_omitted > 0
      ? attempts_omitted
      : 0;
  // Read as written, then held to the contract's bounds again: a writer is not trusted with them.
  let history: AttemptHistory = { attempts: [], attempts_omitted: omitted };
  for (const a of attempts.filter(isEntry)) {
    history = withAttempt(history, {
      attempt: a.attempt,
      at: a.at,
      http_status: a.http_status,
      error: a.error === null ? null : attemptError(a.error),
      duration_ms: a.duration_ms,
    });
  }
  return history;
}

function isEntry(v: unknown): v is AttemptEntry {
  if (!v || typeof v !== 'object') return false;
  const e = v as Record<string, unknown>;
  const nullable = (x: unknown, type: 'string' | 'number') => x === null || typeof x === type;
  return (
    typeof e.attempt === 'number' &&
    Number.isSafeInteger(e.attempt) &&
    e.attempt > 0 &&
    nullable(e.at, 'string') &&
    nullable(e.http_status, 'number') &&
    nullable(e.error, 'string') &&
    nullable(e.duration_ms, 'number')
  );
}
