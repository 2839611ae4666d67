/**
 * Second POSTs the runs API double's dedup would hide. The double answers 409 with the same run id to a repeated
 * dispatch_key, so "one run per key" holds even when the relay posted twice; these per-key counts make a second
 * POST visible, and `expectConflictsBounded` fails on a 409 that no lost answer explains.
 */
import type { RunsApiDouble } from '../../devstack/runsApiDouble';

export interface KeyCounts {
  /** POST /v1/runs calls that reached admission for this run key (any answer). */
  posts: number;
  created: number;
  conflicts: number;
  /** Calls of this key admitted whose answer the client never heard: each lets its retry hear one 409. */
  lostAnswers: number;
}

/** A 409 the suite expects beyond the double's own faults (a worker killed mid-call, say), and why. */
export interface ConflictAllowance {
  runKey: string;
  conflicts: number;
  why: string;
}

/** POSTs, 201s and 409s per run key, from what the double recorded. */
export function perKeyCounts(api: RunsApiDouble): Map<string, KeyCounts> {
  const counts = new Map<string, KeyCounts>();
  for (const r of api.requests) {
    if (r.runKey === undefined) continue;
    const c = counts.get(r.runKey) ?? { posts: 0, created: 0, conflicts: 0, lostAnswers: 0 };
    c.posts++;
    if (r.answer === 201) c.created++;
    if (r.answer === 409) c.conflicts++;
    if (r.answerLost === true) c.lostAnswers++;
    counts.set(r.runKey, c);
  }
  return counts;
}

/** The keys whose 409s exceed their lost answers plus what `allowed` grants them, each with its account. */
export function conflictsOverBound(
  api: RunsApiDouble,
  allowed: readonly ConflictAllowance[] = [],
): { runKey: string; counts: KeyCounts; bound: number }[] {
  const extra = new Map<string, number>();
  for (const a of allowed) extra.set(a.runKey, (extra.get(a.runKey) ?? 0) + a.conflicts);
  const over: { runKey: string; counts: KeyCounts; bound: number }[] = [];
  for (const [runKey, counts] of perKeyCounts(api)) {
    const bound = counts.lostAnswers + (extra.get(runKey) ?? 0);
    if (counts.conflicts > bound) over.push({ runKey, counts, bound });
  }
  return over;
}

/**
 * Every key's 409s are at most its lost answers plus what `allowed` grants it: normally 0, so a second POST
 * of a dispatch whose first was answered fails the suite instead of vanishing into the dedup.
 */
export function expectConflictsBounded(api: RunsApiDouble, allowed: readonly ConflictAllowance[] = []): void {
  const over = conflictsOverBound(api, allowed);
  if (over.length > 0) {
    const shown = over.map(
      ({ runKey, counts: c, bound }) =>
        `${runKey}: ${c.conflicts} 409(s) of ${c.posts} POST(s), bound ${bound}`,
    );
    throw new Error(
      `second POSTs without a scripted cause (the double's dedup hid them): ${shown.join('; ')}`,
    );
  }
}
